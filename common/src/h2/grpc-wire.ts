/**
 * gRPC over HTTP/2 at the byte level, as much as a proxy needs: the 5-byte message prefix, the
 * status trailers and their percent-encoded message, and which request headers travel on to a
 * worker (the client's own metadata: tokens, trace ids) and which are this hop's.
 */
import type { OutgoingHttpHeaders } from 'node:http2';
import { gunzipSync, inflateSync } from 'node:zlib';

export type GrpcHeaders = OutgoingHttpHeaders;

/** One unary answer as bytes: the message without its prefix, or a gRPC status. */
export interface RawAnswer {
  readonly ok: boolean;
  /** The answer's message, without its prefix. */
  readonly body?: Buffer;
  readonly code?: number;
  readonly details?: string;
}

const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** Parses a grpc-timeout header ("250m", "3S", "1500u", ...) into milliseconds; null if malformed. */
export function parseGrpcTimeout(value: string): number | null {
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!m) return null;
  return Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!;
}

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
 * status block) or with END_STREAM on the last DATA frame (a client's request); with `end`
 * false and no trailers the stream stays open (one message of a stream of them).
 */
export function writeMessage<S>(sink: DataSink<S>, s: S, body: Buffer, trailers: Buffer | null, end = true): void {
  const endStream = trailers === null && end;
  if (body.length <= COALESCE_BYTES) {
    const out = Buffer.allocUnsafe(5 + body.length);
    out[0] = 0;
    out.writeUInt32BE(body.length, 1);
    body.copy(out, 5);
    sink.writeData(s, out, endStream, trailers);
    return;
  }
  sink.writeData(s, messagePrefix(body.length), false);
  sink.writeData(s, body, endStream, trailers);
}

export type Unframed =
  | { readonly ok: true; readonly message: Buffer }
  | { readonly ok: false; readonly error: string; readonly code?: number };

/** gRPC's RESOURCE_EXHAUSTED: a message past the size limit, before or after inflating. */
const RESOURCE_EXHAUSTED = 8;

/**
 * The one message of a unary call's body. A compressed message is inflated (gzip or deflate, the
 * encodings a client may use without asking) up to `maxBytes`; anything else is refused.
 */
export function unframeUnary(body: Buffer, encoding: string | undefined, maxBytes = Infinity): Unframed {
  if (body.length < 5) return { ok: false, error: `a gRPC message needs a 5-byte prefix, got ${body.length} bytes` };
  const len = body.readUInt32BE(1);
  if (body.length !== 5 + len)
    return {
      ok: false,
      error: `a unary call carries one message: prefix says ${len} bytes, body has ${body.length - 5}`,
    };
  return inflateMessage(body[0]!, body.subarray(5), encoding, maxBytes);
}

/**
 * One message's bytes as sent (`flag` is its prefix's compressed flag), inflated when compressed;
 * inflating stops past `maxBytes`, so a small compressed message cannot become a huge one.
 */
export function inflateMessage(
  flag: number,
  message: Buffer,
  encoding: string | undefined,
  maxBytes: number,
): Unframed {
  if (flag === 0) return { ok: true, message };
  const limit = Number.isFinite(maxBytes) ? { maxOutputLength: Math.max(1, maxBytes + 1) } : {};
  let out: Buffer;
  try {
    if (encoding === 'gzip') out = gunzipSync(message, limit);
    else if (encoding === 'deflate') out = inflateSync(message, limit);
    else return { ok: false, error: `compressed message with unsupported grpc-encoding '${encoding ?? ''}'` };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      return {
        ok: false,
        code: RESOURCE_EXHAUSTED,
        error: `Received message larger than max (more than ${maxBytes} bytes once inflated)`,
      };
    return { ok: false, error: `message does not decompress: ${(err as Error).message}` };
  }
  if (out.length > maxBytes)
    return {
      ok: false,
      code: RESOURCE_EXHAUSTED,
      error: `Received message larger than max (${out.length} vs. ${maxBytes})`,
    };
  return { ok: true, message: out };
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
