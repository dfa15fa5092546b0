/**
 * HTTP/2 frames (RFC 9113 section 4) on a byte stream: a reader that cuts whatever chunks a socket
 * delivers into whole frames, and the writers for the frames this gateway sends. Payloads are
 * views into the socket's chunks when a frame lies in one chunk (the common case), so forwarding a
 * message costs no copy here.
 */

export const FRAME_DATA = 0x0;
export const FRAME_HEADERS = 0x1;
export const FRAME_PRIORITY = 0x2;
export const FRAME_RST_STREAM = 0x3;
export const FRAME_SETTINGS = 0x4;
export const FRAME_PUSH_PROMISE = 0x5;
export const FRAME_PING = 0x6;
export const FRAME_GOAWAY = 0x7;
export const FRAME_WINDOW_UPDATE = 0x8;
export const FRAME_CONTINUATION = 0x9;

export const FLAG_END_STREAM = 0x1;
export const FLAG_ACK = 0x1;
export const FLAG_END_HEADERS = 0x4;
export const FLAG_PADDED = 0x8;
export const FLAG_PRIORITY = 0x20;

export const SETTINGS_HEADER_TABLE_SIZE = 0x1;
export const SETTINGS_ENABLE_PUSH = 0x2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

export const ERR_NO_ERROR = 0x0;
export const ERR_PROTOCOL = 0x1;
export const ERR_INTERNAL = 0x2;
export const ERR_FLOW_CONTROL = 0x3;
export const ERR_STREAM_CLOSED = 0x5;
export const ERR_FRAME_SIZE = 0x6;
export const ERR_REFUSED_STREAM = 0x7;
export const ERR_CANCEL = 0x8;
export const ERR_COMPRESSION = 0x9;
export const ERR_ENHANCE_YOUR_CALM = 0xb;

/** The 24 bytes a client sends first (RFC 9113 section 3.4). */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** The frame size every peer must accept; larger only after the peer's SETTINGS_MAX_FRAME_SIZE. */
export const DEFAULT_MAX_FRAME_SIZE = 16_384;

/** A connection-level protocol violation: the connection answers GOAWAY with `code` and closes. */
export class H2ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export type FrameHandler = (type: number, flags: number, streamId: number, payload: Buffer) => void;

/**
 * Cuts a byte stream into frames. Frames larger than `maxFrameSize` (what this side advertised)
 * are a FRAME_SIZE_ERROR, thrown before their payload is buffered.
 */
export class FrameReader {
  /** Bytes of an incomplete frame, kept until the rest arrives. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes the pending frame needs in all, once its header is in (-1 before): read once, so a
   * frame dribbled in many small reads costs linear time. */
  private pendingNeed = -1;

  constructor(
    private readonly onFrame: FrameHandler,
    public maxFrameSize = DEFAULT_MAX_FRAME_SIZE,
  ) {}

  push(chunk: Buffer): void {
    let buf = chunk;
    if (this.pendingBytes > 0) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      // Not even a frame header yet, or a header whose payload is not complete: keep waiting
      // without joining the pieces (a 16 MB message arrives in many reads).
      if (this.pendingBytes < 9) return;
      if (this.pendingNeed < 0) {
        const length = this.peekLength();
        if (length > this.maxFrameSize)
          throw new H2ConnectionError(ERR_FRAME_SIZE, `frame of ${length} bytes exceeds ${this.maxFrameSize}`);
        this.pendingNeed = 9 + length;
      }
      if (this.pendingBytes < this.pendingNeed) return;
      buf = Buffer.concat(this.pending, this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
      this.pendingNeed = -1;
    }
    let off = 0;
    while (buf.length - off >= 9) {
      const length = (buf[off]! << 16) | (buf[off + 1]! << 8) | buf[off + 2]!;
      if (length > this.maxFrameSize)
        throw new H2ConnectionError(ERR_FRAME_SIZE, `frame of ${length} bytes exceeds ${this.maxFrameSize}`);
      if (buf.length - off < 9 + length) break;
      const type = buf[off + 3]!;
      const flags = buf[off + 4]!;
      const streamId = buf.readUInt32BE(off + 5) & 0x7fffffff;
      this.onFrame(type, flags, streamId, buf.subarray(off + 9, off + 9 + length));
      off += 9 + length;
    }
    if (off < buf.length) {
      const rest = buf.subarray(off);
      this.pending.push(rest);
      this.pendingBytes = rest.length;
      // A whole header was already checked against the maximum by the loop above.
      if (rest.length >= 9) this.pendingNeed = 9 + ((rest[0]! << 16) | (rest[1]! << 8) | rest[2]!);
    }
  }

  /** The length field of the pending frame header (its first 3 bytes may span pieces). */
  private peekLength(): number {
    let n = 0;
    let got = 0;
    for (const p of this.pending) {
      for (let i = 0; i < p.length && got < 3; i++, got++) n = (n << 8) | p[i]!;
      if (got === 3) break;
    }
    return n;
  }
}

/** Writes a 9-byte frame header into `out` at `off`. */
export function writeFrameHeader(
  out: Buffer,
  off: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  out[off] = length >>> 16;
  out[off + 1] = (length >>> 8) & 0xff;
  out[off + 2] = length & 0xff;
  out[off + 3] = type;
  out[off + 4] = flags;
  out.writeUInt32BE(streamId, off + 5);
}

/** One frame with its payload copied behind the header (for small payloads). */
export function frame(type: number, flags: number, streamId: number, payload?: Buffer): Buffer {
  const len = payload?.length ?? 0;
  const out = Buffer.allocUnsafe(9 + len);
  writeFrameHeader(out, 0, len, type, flags, streamId);
  if (payload) payload.copy(out, 9);
  return out;
}

export function settingsFrame(settings: ReadonlyArray<readonly [number, number]>): Buffer {
  const out = Buffer.allocUnsafe(9 + 6 * settings.length);
  writeFrameHeader(out, 0, 6 * settings.length, FRAME_SETTINGS, 0, 0);
  let off = 9;
  for (const [id, value] of settings) {
    out.writeUInt16BE(id, off);
    out.writeUInt32BE(value, off + 2);
    off += 6;
  }
  return out;
}

export const SETTINGS_ACK: Buffer = frame(FRAME_SETTINGS, FLAG_ACK, 0);

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const out = Buffer.allocUnsafe(13);
  writeFrameHeader(out, 0, 4, FRAME_WINDOW_UPDATE, 0, streamId);
  out.writeUInt32BE(increment, 9);
  return out;
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const out = Buffer.allocUnsafe(13);
  writeFrameHeader(out, 0, 4, FRAME_RST_STREAM, 0, streamId);
  out.writeUInt32BE(code, 9);
  return out;
}

export function goawayFrame(lastStreamId: number, code: number, debug = ''): Buffer {
  const d = Buffer.from(debug, 'utf8');
  const out = Buffer.allocUnsafe(17 + d.length);
  writeFrameHeader(out, 0, 8 + d.length, FRAME_GOAWAY, 0, 0);
  out.writeUInt32BE(lastStreamId, 9);
  out.writeUInt32BE(code, 13);
  d.copy(out, 17);
  return out;
}

/**
 * The payload of a HEADERS or DATA frame without its padding (and, for HEADERS, without the
 * priority fields), or null when the padding is longer than the frame (a PROTOCOL_ERROR).
 */
export function unpad(payload: Buffer, flags: number, isHeaders: boolean): Buffer | null {
  let start = 0;
  let end = payload.length;
  if (flags & FLAG_PADDED) {
    if (payload.length < 1) return null;
    end -= payload[0]!;
    start = 1;
  }
  if (isHeaders && flags & FLAG_PRIORITY) start += 5;
  if (end < start) return null;
  return payload.subarray(start, end);
}
