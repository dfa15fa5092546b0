import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { deflateSync, gzipSync } from 'node:zlib';
import {
  decodeGrpcMessage,
  encodeGrpcMessage,
  forwardableList,
  messagePrefix,
  unframeUnary,
} from '../../src/h2/grpc-wire.js';

suite('gRPC wire pieces of the HTTP/2 proxy', () => {
  test('one prefixed message unframes; a short, long or doubled body is refused with the reason', () => {
    const msg = Buffer.from('hello');
    const framed = Buffer.concat([messagePrefix(msg.length), msg]);
    const u = unframeUnary(framed, undefined);
    assert.ok(u.ok && u.message.equals(msg));
    assert.match((unframeUnary(framed.subarray(0, 3), undefined) as { error: string }).error, /5-byte prefix/);
    assert.match((unframeUnary(framed.subarray(0, 8), undefined) as { error: string }).error, /one message/);
    assert.equal(unframeUnary(Buffer.concat([framed, framed]), undefined).ok, false);
  });

  test('gzip and deflate messages are inflated; another encoding is refused', () => {
    for (const [enc, z] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
    ] as const) {
      const c = z(Buffer.from('tensor bytes'));
      const framed = Buffer.concat([Buffer.from([1]), Buffer.alloc(4), c]);
      framed.writeUInt32BE(c.length, 1);
      const u = unframeUnary(framed, enc);
      assert.ok(u.ok, enc);
      assert.equal(u.ok && u.message.toString(), 'tensor bytes');
      assert.equal(unframeUnary(framed, 'snappy').ok, false);
    }
  });

  test('grpc-message percent-encoding round-trips non-ASCII and %', () => {
    for (const s of ['plain', "model 'ünïcode' 100% gone", 'line\nbreak']) {
      const e = encodeGrpcMessage(s);
      assert.match(e, /^[\x20-\x7e]*$/);
      assert.equal(decodeGrpcMessage(e), s);
    }
    assert.equal(encodeGrpcMessage('plain text'), 'plain text');
  });

  test("only the client's metadata is forwarded, never this hop's transport headers", () => {
    const out = forwardableList([
      ':path',
      '/x',
      ':authority',
      'gw',
      'content-type',
      'application/grpc',
      'te',
      'trailers',
      'grpc-timeout',
      '5S',
      'user-agent',
      'grpc-c++',
      'authorization',
      'Bearer t',
      'x-trace-bin',
      'AAEC',
      'x-trace-bin',
      'AQID',
    ]);
    assert.deepEqual(out, { authorization: 'Bearer t', 'x-trace-bin': ['AAEC', 'AQID'] });
  });
});
