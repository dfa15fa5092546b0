import { describe, expect, test } from 'vitest';
import { toCsv } from './activity-export.js';

describe('toCsv', () => {
  test('a header of the keys, objects as JSON, null empty, quoting where a cell needs it', () => {
    const rows = [
      { seq: 1, action: 'model.pin', after: { residency: 'device' }, note: null },
      { seq: 2, action: 'say "hi", twice', after: null, note: 'a\nb' },
    ];
    expect(toCsv(rows).split('\n')).toEqual([
      'seq,action,after,note',
      '1,model.pin,"{""residency"":""device""}",',
      '2,"say ""hi"", twice",,"a',
      'b"',
    ]);
  });
  test('no rows, no text', () => {
    expect(toCsv([])).toBe('');
  });
});
