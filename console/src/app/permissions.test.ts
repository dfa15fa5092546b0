import { describe, expect, test } from 'vitest';
import { modelActionVerdict } from './permissions.js';
import { takeSetupTokenFromUrl } from './first-run.js';

const ready = { state: 'ready', resident: 'device', pin: 'unpinned' } as const;
const operator = { scope: 'operator', controlMode: 'explicit' } as const;

describe('modelActionVerdict', () => {
  test('a viewer may do nothing and is told why', () => {
    const v = modelActionVerdict('pin', ready, { scope: 'viewer', controlMode: 'explicit' });
    expect(v).toEqual({ allowed: false, whyNot: 'needs an operator or admin token' });
  });
  test('static mode refuses load and unload but not pinning', () => {
    const s = { scope: 'admin', controlMode: 'static' } as const;
    expect(modelActionVerdict('unload', ready, s).whyNot).toMatch(/static mode/);
    expect(modelActionVerdict('pin', ready, s).allowed).toBe(true);
  });
  test('state decides the rest', () => {
    expect(modelActionVerdict('load', ready, operator).whyNot).toBe('already resident on the device');
    expect(modelActionVerdict('unload', { ...ready, pin: 'device' }, operator).whyNot).toBe('pinned: unpin it first');
    expect(modelActionVerdict('unpin', ready, operator).whyNot).toBe('not pinned');
    expect(modelActionVerdict('load', { ...ready, state: 'failed' }, operator).allowed).toBe(false);
    expect(modelActionVerdict('reload', { ...ready, state: 'failed' }, operator).allowed).toBe(true);
  });
});

describe('takeSetupTokenFromUrl', () => {
  test('takes the token and strips the fragment at once', () => {
    const replaced: string[] = [];
    const t = takeSetupTokenFromUrl({ hash: '#setup=abc%2Fd', pathname: '/', search: '?x=1' }, (u) => replaced.push(u));
    expect(t).toBe('abc/d');
    expect(replaced).toEqual(['/?x=1']);
  });
  test('leaves other fragments alone', () => {
    const replaced: string[] = [];
    expect(takeSetupTokenFromUrl({ hash: '#models', pathname: '/', search: '' }, (u) => replaced.push(u))).toBeNull();
    expect(replaced).toEqual([]);
  });
});
