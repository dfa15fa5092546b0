/**
 * The frame reader cuts any split of the byte stream into the same frames: every one-cut split of
 * a stream of several frames, and one byte at a time. An oversized frame is refused from its
 * header, before its payload arrives.
 */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import {
  ERR_FRAME_SIZE,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FLAG_PADDED,
  FLAG_PRIORITY,
  FRAME_DATA,
  FRAME_HEADERS,
  FRAME_SETTINGS,
  frame,
  FrameReader,
  goawayFrame,
  H2ConnectionError,
  settingsFrame,
  unpad,
  windowUpdateFrame,
} from '../../src/h2/frame/frame-codec.js';

type Seen = [number, number, number, string];

function readAll(chunks: Buffer[], maxFrameSize?: number): Seen[] {
  const seen: Seen[] = [];
  const r = new FrameReader((t, f, id, p) => seen.push([t, f, id, p.toString('hex')]), maxFrameSize);
  for (const c of chunks) r.push(c);
  return seen;
}

suite('HTTP/2 frame codec', () => {
  const stream = Buffer.concat([
    settingsFrame([
      [4, 1 << 20],
      [5, 1 << 20],
    ]),
    frame(FRAME_HEADERS, FLAG_END_HEADERS, 1, Buffer.from('8286', 'hex')),
    frame(FRAME_DATA, 0, 1, Buffer.alloc(0)),
    frame(FRAME_DATA, FLAG_END_STREAM | FLAG_PADDED, 1, Buffer.from([3, 1, 2, 3, 4, 0, 0, 0])),
    windowUpdateFrame(0, 12345),
    goawayFrame(7, 0, 'bye'),
  ]);
  const whole = readAll([stream]);

  test('a stream of frames reads whole, with types, flags, ids and payloads', () => {
    assert.equal(whole.length, 6);
    assert.deepEqual(
      whole.map(([t, f, id]) => [t, f, id]),
      [
        [FRAME_SETTINGS, 0, 0],
        [FRAME_HEADERS, FLAG_END_HEADERS, 1],
        [FRAME_DATA, 0, 1],
        [FRAME_DATA, FLAG_END_STREAM | FLAG_PADDED, 1],
        [8, 0, 0],
        [7, 0, 0],
      ],
    );
  });

  test('split at every byte boundary, and one byte at a time, it reads the same frames', () => {
    for (let cut = 1; cut < stream.length; cut++)
      assert.deepEqual(readAll([stream.subarray(0, cut), stream.subarray(cut)]), whole, `cut at ${cut}`);
    const bytes: Buffer[] = [];
    for (let i = 0; i < stream.length; i++) bytes.push(stream.subarray(i, i + 1));
    assert.deepEqual(readAll(bytes), whole);
  });

  test('a frame over the advertised maximum is a FRAME_SIZE_ERROR from its header alone', () => {
    const big = frame(FRAME_DATA, 0, 1, Buffer.alloc(100));
    for (const chunks of [[big], [big.subarray(0, 3), big.subarray(3, 9)], [big.subarray(0, 9)]])
      assert.throws(
        () => readAll(chunks, 50),
        (e: unknown) => e instanceof H2ConnectionError && e.code === ERR_FRAME_SIZE,
      );
  });

  test('padding and priority fields are stripped; padding longer than the frame is refused', () => {
    assert.deepEqual(unpad(Buffer.from([2, 9, 9, 0, 0]), FLAG_PADDED, false), Buffer.from([9, 9]));
    assert.deepEqual(unpad(Buffer.from([0, 0, 0, 1, 16, 0x82]), FLAG_PRIORITY, true), Buffer.from([0x82]));
    assert.equal(unpad(Buffer.from([5, 1]), FLAG_PADDED, false), null);
  });
});
