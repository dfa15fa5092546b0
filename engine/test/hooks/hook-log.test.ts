import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { HookLog, MAX_CHARS } from '../../src/hooks/hook-log.js';

function capture(level: 'debug' | 'info' | 'warn' = 'info') {
  const lines: Record<string, unknown>[] = [];
  let now = 0;
  const log = new HookLog(
    { level, fields: { worker: 'w0' } },
    (l) => lines.push(JSON.parse(l) as Record<string, unknown>),
    () => now,
  );
  return { log, lines, advance: (ms: number) => (now += ms) };
}

suite('HookLog: what ctx.log writes', () => {
  test("one JSON line per call, with the engine's fields, the model and the request id", () => {
    const { log, lines } = capture();
    const ctxLog = log.logger('m', 'r1');
    ctxLog('rows %d of', 3, { a: 1 });
    ctxLog.warn('careful');
    assert.equal(lines.length, 2);
    assert.deepEqual(
      { ...lines[0], time: undefined },
      {
        level: 'info',
        time: undefined,
        worker: 'w0',
        msg: 'hook',
        model: 'm',
        requestId: 'r1',
        text: 'rows 3 of { a: 1 }',
      },
    );
    assert.equal(lines[1]!.level, 'warn');
  });

  test("below the engine's level nothing is written", () => {
    const { log, lines } = capture('warn');
    log.logger('m', 'r')('quiet');
    log.logger('m', 'r').debug('quieter');
    log.logger('m', 'r').error('loud');
    assert.deepEqual(
      lines.map((l) => l.level),
      ['error'],
    );
  });

  test('a long line is cut, saying how long it was', () => {
    const { log, lines } = capture();
    log.logger('m', 'r')('x'.repeat(MAX_CHARS + 10));
    assert.equal(lines[0]!.text, `${'x'.repeat(MAX_CHARS)}... (${MAX_CHARS + 10} chars)`);
  });

  test('a hook logging in a loop is held to a burst, then a rate; the next line written counts the dropped', () => {
    const { log, lines, advance } = capture();
    const ctxLog = log.logger('m', 'r');
    for (let i = 0; i < 1000; i++) ctxLog('spam', i);
    assert.equal(lines.length, 200);
    advance(100); // 5 lines' worth at 50 a second
    for (let i = 0; i < 10; i++) ctxLog('later', i);
    assert.equal(lines.length, 205);
    assert.equal(lines[200]!.dropped, 800);
    assert.equal(lines[201]!.dropped, undefined);
  });

  test('values whose reading runs code (a Proxy, a throwing getter) are written without running it', () => {
    const { log, lines } = capture();
    const trap = () => {
      throw new Error('ran');
    };
    log.logger('m', 'r')(
      new Proxy({}, { ownKeys: trap, get: trap }),
      Object.defineProperty({}, 'g', { get: trap, enumerable: true }),
    );
    assert.equal(lines.length, 1);
    assert.match(String(lines[0]!.text), /Getter/);
  });
});
