/**
 * gRPC over HTTP/2 at the byte level, as much as a proxy needs: the 5-byte message prefix, the
 * status trailers and their percent-encoded message, and which request headers travel on to a
 * worker (the client's own metadata: tokens, trace ids) and which are this hop's.
 */
import type { OutgoingHttpHeaders } from 'node:http2';
import { gunzipSync, inflateSync } from 'node:zlib';

export type GrpcHeaders = OutgoingHttpHeaders;

/** The prefix of one message: compressed flag, then the length (big-endian uint32). */
export function messagePrefix(length: number): Buffer {
  const p = Buffer.allocUnsafe(5);
  p[0] = 0;
  p.writeUInt32BE(length, 1);
  return p;
}

/** Below this size the prefix and the message go out as one buffer (one copy is cheaper than two writes). */
const COALESCE_BYTES = 64 * 1024;

/** Where a prefixed message is written: the frame layer's DATA writer for one stream. */
interface DataSink<S> {
  writeData(s: S, data: Buffer, endStream: boolean, trailers?: Buffer | null): void;
}

/**
 * Writes one prefixed message on stream `s`, then ends the stream: with `trailers` (a server's
 * status block) or with END_STREAM on the last DATA frame (a client's request).
 */
export function writeMessage<S>(sink: DataSink<S>, s: S, body: Buffer, trailers: Buffer | null): void {
  if (body.length <= COALESCE_BYTES) {
    const out = Buffer.allocUnsafe(5 + body.length);
    out[0] = 0;
    out.writeUInt32BE(body.length, 1);
    body.copy(out, 5);
    sink.writeData(s, out, trailers === null, trailers);
    return;
  }
  sink.writeData(s, messagePrefix(body.length), false);
  sink.writeData(s, body, trailers === null, trailers);
}

export type Unframed = { readonly ok: true; readonly message: Buffer } | { readonly ok: false; readonly error: string };

/**
 * The one message of a unary call's body. A compressed message is inflated (gzip or deflate, the
 * encodings a client may use without asking); anything else is refused.
 */
export function unframeUnary(body: Buffer, encoding: string | undefined): Unframed {
  if (body.length < 5) return { ok: false, error: `a gRPC message needs a 5-byte prefix, got ${body.length} bytes` };
  const len = body.readUInt32BE(1);
  if (body.length !== 5 + len)
    return {
      ok: false,
      error: `a unary call carries one message: prefix says ${len} bytes, body has ${body.length - 5}`,
    };
  const message = body.subarray(5);
  if (body[0] === 0) return { ok: true, message };
  try {
    if (encoding === 'gzip') return { ok: true, message: gunzipSync(message) };
    if (encoding === 'deflate') return { ok: true, message: inflateSync(message) };
  } catch (err) {
    return { ok: false, error: `message does not decompress: ${(err as Error).message}` };
  }
  return { ok: false, error: `compressed message with unsupported grpc-encoding '${encoding ?? ''}'` };
}

/** grpc-message's encoding: percent-encode what is not printable ASCII, and '%'. */
export function encodeGrpcMessage(s: string): string {
  // The common case (plain ASCII) costs one test.
  if (!/[^\x20-\x24\x26-\x7e]/.test(s)) return s;
  let out = '';
  for (const b of Buffer.from(s, 'utf8'))
    out +=
      b >= 0x20 && b <= 0x7e && b !== 0x25
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

export function decodeGrpcMessage(s: string | string[] | undefined): string {
  const v = Array.isArray(s) ? s.join(',') : (s ?? '');
  if (!v.includes('%')) return v;
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

/** Headers of this hop, never forwarded: HTTP/2 pseudo-headers, gRPC transport headers. */
const HOP_HEADERS = new Set([
  'content-type',
  'te',
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
  'accept-encoding',
  'user-agent',
  'content-length',
  'connection',
  'host',
]);

/**
 * The client's metadata from a decoded header list, to send on to a worker unchanged (binary
 * `-bin` values stay base64); a repeated name becomes an array.
 */
export function forwardableList(list: readonly string[]): GrpcHeaders {
  const out: GrpcHeaders = {};
  for (let i = 0; i < list.length; i += 2) {
    const k = list[i]!;
    if (k.charCodeAt(0) === 58 /* ':' */ || HOP_HEADERS.has(k)) continue;
    const v = list[i + 1]!;
    const had = out[k];
    if (had === undefined) out[k] = v;
    else out[k] = Array.isArray(had) ? [...had, v] : [String(had), v];
  }
  return out;
}

/** Metadata back into a header list, after `into`'s own entries. */
export function appendMetadata(into: string[], metadata: GrpcHeaders): void {
  for (const k in metadata) {
    const v = metadata[k];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) into.push(k, x);
    else into.push(k, String(v));
  }
}
