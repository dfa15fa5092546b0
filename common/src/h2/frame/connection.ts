/**
 * One HTTP/2 connection on a socket, either side: the preface, SETTINGS, PING, flow control both
 * ways, HEADERS with CONTINUATION, DATA with padding, RST_STREAM and GOAWAY. Streams are plain
 * objects with three callbacks (no Duplex, no per-stream resource tracking): what a unary gRPC
 * call needs and nothing more. A protocol error closes this connection with GOAWAY and never
 * throws out of it.
 */
import type { Socket } from 'node:net';
import { setClampedTimeout } from '../../timers.js';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  ERR_COMPRESSION,
  ERR_ENHANCE_YOUR_CALM,
  ERR_FLOW_CONTROL,
  ERR_FRAME_SIZE,
  ERR_NO_ERROR,
  ERR_PROTOCOL,
  ERR_REFUSED_STREAM,
  ERR_STREAM_CLOSED,
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_CONTINUATION,
  FRAME_DATA,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  FRAME_PING,
  FRAME_PRIORITY,
  FRAME_PUSH_PROMISE,
  FRAME_RST_STREAM,
  FRAME_SETTINGS,
  FRAME_WINDOW_UPDATE,
  FrameReader,
  goawayFrame,
  H2ConnectionError,
  rstStreamFrame,
  SETTINGS_ACK,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_HEADER_TABLE_SIZE,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  SETTINGS_MAX_FRAME_SIZE,
  SETTINGS_MAX_HEADER_LIST_SIZE,
  settingsFrame,
  unpad,
  windowUpdateFrame,
  writeFrameHeader,
  frame,
} from './frame-codec.js';
import { DEFAULT_TABLE_SIZE, HpackDecoder, HpackError, type HeaderList } from './hpack.js';

const MAX_WINDOW = 2 ** 31 - 1;
/** The default initial window before the peer's SETTINGS say otherwise (RFC 9113 6.9.2). */
const DEFAULT_WINDOW = 65_535;

export interface ConnectionOptions {
  readonly role: 'server' | 'client';
  /** Per-stream receive window we advertise (a large tensor should not wait for WINDOW_UPDATEs). */
  readonly streamWindow: number;
  /** Connection receive window, raised once at the start. */
  readonly connectionWindow: number;
  /** Largest frame we accept (SETTINGS_MAX_FRAME_SIZE). */
  readonly maxFrameSize: number;
  /** Server: SETTINGS_MAX_CONCURRENT_STREAMS to advertise. */
  readonly maxConcurrentStreams?: number;
  /** Largest decoded header list we accept. */
  readonly maxHeaderListBytes: number;
}

const noop = (): void => {};

/** One stream's state; the owner (server call or client call) sets the callbacks. */
export class H2Stream {
  sendWindow: number;
  /** DATA the peer's window did not allow yet, then the trailers block that ends the stream. */
  queue: Buffer[] | null = null;
  queuedTrailers: Buffer | null = null;
  queuedEnd = false;
  /** Bytes of DATA in `queue`. */
  queuedBytes = 0;
  recvUnacked = 0;
  /** While set, what the peer sends on this stream is not credited back (holdCredit). */
  creditHeld = false;
  localClosed = false;
  remoteClosed = false;
  /** Set when the stream ended by RST_STREAM (either side) or the connection went away. */
  resetCode = -1;
  onHeaders: (list: HeaderList, endStream: boolean) => void = noop;
  onData: (chunk: Buffer, endStream: boolean) => void = noop;
  /** The peer reset the stream, or the connection closed under it (`code` is the RST or GOAWAY code, -1 when the socket just went). */
  onReset: (code: number, why: string) => void = noop;
  /** Everything queued for the peer's window has been written to the socket. */
  onDrain: () => void = noop;

  constructor(
    readonly id: number,
    sendWindow: number,
  ) {
    this.sendWindow = sendWindow;
  }
}

export interface ConnectionHooks {
  /** Server: the peer opened stream `id`; return its state (the connection sets nothing else on it). */
  onStream?(stream: H2Stream, headers: HeaderList, endStream: boolean): void;
  /** The peer sent GOAWAY. */
  onGoaway?(lastStreamId: number, code: number): void;
  /** The socket is gone (after every stream's onReset). */
  onClose?(err: Error | null): void;
}

export class H2Connection {
  readonly streams = new Map<number, H2Stream>();
  /** Highest stream id the peer opened (server) and we processed: the last-stream-id of our GOAWAY. */
  lastPeerStreamId = 0;
  /** Client: the next stream id to open. */
  private nextStreamId = 1;
  private readonly reader: FrameReader;
  private readonly decoder: HpackDecoder;
  private prefaceSeen: boolean;
  private prefaceBuf: Buffer | null = null;
  /** corkForTick has corked the socket and an uncork is due at the end of this tick. */
  private tickCorked = false;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  /** The peer lowered its header table size: our next block starts with a size update to 0. */
  sizeUpdatePending = false;
  private sendWindow = DEFAULT_WINDOW;
  private recvUnacked = 0;
  /** HEADERS without END_HEADERS: the block so far, waiting for CONTINUATION. */
  private continuation: { id: number; flags: number; parts: Buffer[]; bytes: number } | null = null;
  /** Streams with DATA waiting for window, in arrival order. */
  private blocked = new Set<H2Stream>();
  closed = false;
  goawaySent = false;
  goawayReceived = false;
  /** From the peer's GOAWAY: our streams above this id were not processed. */
  peerLastStreamId = MAX_WINDOW;
  /** Bytes of incomplete messages the streams' owners hold (they count it; the server caps it). */
  held = 0;
  /** The first SETTINGS from the peer arrived (the connection is known to speak HTTP/2). */
  settingsReceived = false;

  private readonly opts: ConnectionOptions;

  constructor(
    readonly socket: Socket,
    opts: ConnectionOptions,
    private readonly hooks: ConnectionHooks,
  ) {
    // A window is at most 2^31-1 (RFC 9113 6.9.1): a larger one asked for (twice a message limit
    // near 2 GiB) would make the peer fail the connection on our first WINDOW_UPDATE.
    opts = {
      ...opts,
      streamWindow: Math.min(opts.streamWindow, MAX_WINDOW),
      connectionWindow: Math.min(opts.connectionWindow, MAX_WINDOW),
    };
    this.opts = opts;
    this.reader = new FrameReader(this.onFrame, opts.maxFrameSize);
    this.decoder = new HpackDecoder(DEFAULT_TABLE_SIZE, opts.maxHeaderListBytes);
    this.prefaceSeen = opts.role === 'client';
    socket.on('data', this.onBytes);
    socket.on('error', noop);
    socket.once('close', () => this.teardown(null));
    const settings: [number, number][] = [
      [SETTINGS_INITIAL_WINDOW_SIZE, opts.streamWindow],
      [SETTINGS_MAX_FRAME_SIZE, opts.maxFrameSize],
      [SETTINGS_HEADER_TABLE_SIZE, DEFAULT_TABLE_SIZE],
      // Advisory: a peer that honours it never sends a list this side would refuse.
      [SETTINGS_MAX_HEADER_LIST_SIZE, opts.maxHeaderListBytes],
    ];
    if (opts.role === 'client') settings.push([SETTINGS_ENABLE_PUSH, 0]);
    if (opts.maxConcurrentStreams !== undefined)
      settings.push([SETTINGS_MAX_CONCURRENT_STREAMS, opts.maxConcurrentStreams]);
    const hello: Buffer[] = [];
    if (opts.role === 'client') hello.push(CLIENT_PREFACE);
    hello.push(settingsFrame(settings));
    if (opts.connectionWindow > DEFAULT_WINDOW)
      hello.push(windowUpdateFrame(0, opts.connectionWindow - DEFAULT_WINDOW));
    socket.write(Buffer.concat(hello));
  }

  // ---- reading ----

  private readonly onBytes = (chunk: Buffer): void => {
    if (this.closed) return;
    try {
      if (!this.prefaceSeen) {
        const got = this.prefaceBuf ? Buffer.concat([this.prefaceBuf, chunk]) : chunk;
        const n = Math.min(got.length, CLIENT_PREFACE.length);
        if (!got.subarray(0, n).equals(CLIENT_PREFACE.subarray(0, n)))
          throw new H2ConnectionError(ERR_PROTOCOL, 'not an HTTP/2 client preface');
        if (got.length < CLIENT_PREFACE.length) {
          this.prefaceBuf = got;
          return;
        }
        this.prefaceSeen = true;
        this.prefaceBuf = null;
        chunk = got.subarray(CLIENT_PREFACE.length);
        if (chunk.length === 0) return;
      }
      this.socket.cork();
      try {
        this.reader.push(chunk);
      } finally {
        this.socket.uncork();
      }
    } catch (err) {
      this.fail(err);
    }
  };

  /** A connection error: GOAWAY with its code, then the socket goes. */
  fail(err: unknown): void {
    if (this.closed) return;
    const code =
      err instanceof H2ConnectionError ? err.code : err instanceof HpackError ? ERR_COMPRESSION : ERR_PROTOCOL;
    const msg = (err as Error).message ?? String(err);
    if (!this.goawaySent || code !== ERR_NO_ERROR) {
      this.goawaySent = true;
      this.socket.write(goawayFrame(this.lastPeerStreamId, code, msg.slice(0, 200)));
    }
    this.socket.end();
    // A peer that does not close its side is cut shortly after.
    setClampedTimeout(() => this.socket.destroy(), 1000).unref();
    this.teardown(new Error(`HTTP/2 connection error: ${msg}`));
  }

  private readonly onFrame = (type: number, flags: number, id: number, payload: Buffer): void => {
    if (this.continuation !== null) {
      if (type !== FRAME_CONTINUATION || id !== this.continuation.id)
        throw new H2ConnectionError(ERR_PROTOCOL, 'expected CONTINUATION');
      this.continuation.parts.push(payload);
      this.continuation.bytes += payload.length;
      // Compressed bytes beyond twice the decoded limit cannot make an acceptable list.
      if (this.continuation.bytes > 2 * this.opts.maxHeaderListBytes)
        throw new H2ConnectionError(ERR_ENHANCE_YOUR_CALM, 'header block too large');
      if (flags & FLAG_END_HEADERS) {
        const c = this.continuation;
        this.continuation = null;
        this.onHeaderBlock(c.id, c.flags, Buffer.concat(c.parts));
      }
      return;
    }
    switch (type) {
      case FRAME_DATA:
        return this.onDataFrame(flags, id, payload);
      case FRAME_HEADERS: {
        if (id === 0) throw new H2ConnectionError(ERR_PROTOCOL, 'HEADERS on stream 0');
        const block = unpad(payload, flags, true);
        if (block === null) throw new H2ConnectionError(ERR_PROTOCOL, 'HEADERS padding exceeds the frame');
        if (flags & FLAG_END_HEADERS) return this.onHeaderBlock(id, flags, block);
        this.continuation = { id, flags, parts: [block], bytes: block.length };
        return;
      }
      case FRAME_CONTINUATION:
        throw new H2ConnectionError(ERR_PROTOCOL, 'CONTINUATION without HEADERS');
      case FRAME_SETTINGS:
        return this.onSettings(flags, id, payload);
      case FRAME_PING:
        if (id !== 0) throw new H2ConnectionError(ERR_PROTOCOL, 'PING on a stream');
        if (payload.length !== 8) throw new H2ConnectionError(ERR_FRAME_SIZE, 'PING of the wrong size');
        if (!(flags & FLAG_ACK)) this.socket.write(frame(FRAME_PING, FLAG_ACK, 0, payload));
        return;
      case FRAME_WINDOW_UPDATE:
        return this.onWindowUpdate(id, payload);
      case FRAME_RST_STREAM: {
        if (id === 0) throw new H2ConnectionError(ERR_PROTOCOL, 'RST_STREAM on stream 0');
        if (payload.length !== 4) throw new H2ConnectionError(ERR_FRAME_SIZE, 'RST_STREAM of the wrong size');
        const s = this.streams.get(id);
        if (s) {
          const code = payload.readUInt32BE(0);
          s.resetCode = code;
          this.forget(s);
          s.onReset(code, `stream reset by the peer (code ${code})`);
        }
        return;
      }
      case FRAME_GOAWAY: {
        if (id !== 0 || payload.length < 8) throw new H2ConnectionError(ERR_PROTOCOL, 'malformed GOAWAY');
        const last = payload.readUInt32BE(0) & 0x7fffffff;
        const code = payload.readUInt32BE(4);
        this.goawayReceived = true;
        this.peerLastStreamId = Math.min(this.peerLastStreamId, last);
        this.hooks.onGoaway?.(last, code);
        // Our streams the peer will never process end now, so their callers can go elsewhere.
        for (const s of [...this.streams.values()])
          if (s.id > last && (s.id & 1) === (this.opts.role === 'client' ? 1 : 0)) {
            s.resetCode = code;
            this.forget(s);
            s.onReset(code, `stream not processed (past the peer's GOAWAY, last stream ${last})`);
          }
        return;
      }
      case FRAME_PRIORITY:
        if (payload.length !== 5) throw new H2ConnectionError(ERR_FRAME_SIZE, 'PRIORITY of the wrong size');
        return;
      case FRAME_PUSH_PROMISE:
        throw new H2ConnectionError(ERR_PROTOCOL, 'PUSH_PROMISE with push disabled');
      default:
        return; // unknown frame types are ignored (RFC 9113 4.1)
    }
  };

  private onSettings(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) throw new H2ConnectionError(ERR_PROTOCOL, 'SETTINGS on a stream');
    if (flags & FLAG_ACK) {
      if (payload.length !== 0) throw new H2ConnectionError(ERR_FRAME_SIZE, 'SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6 !== 0) throw new H2ConnectionError(ERR_FRAME_SIZE, 'SETTINGS of the wrong size');
    for (let off = 0; off < payload.length; off += 6) {
      const key = payload.readUInt16BE(off);
      const value = payload.readUInt32BE(off + 2);
      if (key === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) throw new H2ConnectionError(ERR_FLOW_CONTROL, 'initial window too large');
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const s of this.streams.values()) {
          s.sendWindow += delta;
          if (s.sendWindow > MAX_WINDOW) throw new H2ConnectionError(ERR_FLOW_CONTROL, 'stream window overflow');
        }
        if (delta > 0) this.flushBlocked();
      } else if (key === SETTINGS_MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_SIZE || value > 16_777_215)
          throw new H2ConnectionError(ERR_PROTOCOL, `SETTINGS_MAX_FRAME_SIZE ${value} out of range`);
        this.peerMaxFrameSize = value;
      } else if (key === SETTINGS_HEADER_TABLE_SIZE) {
        if (value < DEFAULT_TABLE_SIZE) this.sizeUpdatePending = true;
      } else if (key === SETTINGS_ENABLE_PUSH && value > 1) {
        throw new H2ConnectionError(ERR_PROTOCOL, 'SETTINGS_ENABLE_PUSH must be 0 or 1');
      }
    }
    this.settingsReceived = true;
    this.socket.write(SETTINGS_ACK);
  }

  private onWindowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4) throw new H2ConnectionError(ERR_FRAME_SIZE, 'WINDOW_UPDATE of the wrong size');
    const inc = payload.readUInt32BE(0) & 0x7fffffff;
    if (id === 0) {
      if (inc === 0) throw new H2ConnectionError(ERR_PROTOCOL, 'WINDOW_UPDATE of 0');
      this.sendWindow += inc;
      if (this.sendWindow > MAX_WINDOW) throw new H2ConnectionError(ERR_FLOW_CONTROL, 'connection window overflow');
      this.flushBlocked();
      return;
    }
    const s = this.streams.get(id);
    if (!s) return;
    if (inc === 0) return this.resetStream(s, ERR_PROTOCOL, 'WINDOW_UPDATE of 0');
    s.sendWindow += inc;
    if (s.sendWindow > MAX_WINDOW) return this.resetStream(s, ERR_FLOW_CONTROL, 'stream window overflow');
    if (s.queue !== null) this.flushStream(s);
  }

  private onHeaderBlock(id: number, flags: number, block: Buffer): void {
    // The block is decoded even for a stream we will refuse: the decoder's table must stay in step.
    const list = this.decoder.decode(block);
    const end = (flags & FLAG_END_STREAM) !== 0;
    const s = this.streams.get(id);
    if (s) {
      if (s.remoteClosed) return this.resetStream(s, ERR_STREAM_CLOSED, 'HEADERS after END_STREAM');
      if (end) this.remoteEnded(s);
      s.onHeaders(list, end);
      return;
    }
    if (this.opts.role === 'client') return; // a stream we already forgot (reset or cancelled)
    if ((id & 1) === 0 || id <= this.lastPeerStreamId) {
      if (id <= this.lastPeerStreamId) return; // trailers of a stream we already answered and forgot
      throw new H2ConnectionError(ERR_PROTOCOL, `client opened an even stream id ${id}`);
    }
    this.lastPeerStreamId = id;
    const limit = this.opts.maxConcurrentStreams;
    if (this.goawaySent || (limit !== undefined && this.streams.size >= limit)) {
      // Not processed: the client may send it again (elsewhere, or once streams free up).
      this.socket.write(rstStreamFrame(id, ERR_REFUSED_STREAM));
      return;
    }
    const stream = new H2Stream(id, this.peerInitialWindow);
    this.streams.set(id, stream);
    if (end) stream.remoteClosed = true;
    this.hooks.onStream?.(stream, list, end);
  }

  private onDataFrame(flags: number, id: number, payload: Buffer): void {
    if (id === 0) throw new H2ConnectionError(ERR_PROTOCOL, 'DATA on stream 0');
    const len = payload.length;
    // Credit the connection window at once: a stream's own buffering is bounded by its owner
    // (the message size cap), so the connection window need not bound memory too.
    this.recvUnacked += len;
    if (this.recvUnacked >= this.opts.connectionWindow / 2) {
      this.socket.write(windowUpdateFrame(0, this.recvUnacked));
      this.recvUnacked = 0;
    }
    const s = this.streams.get(id);
    if (!s) return; // a stream we reset or finished: its late DATA is dropped
    if (s.remoteClosed) return this.resetStream(s, ERR_STREAM_CLOSED, 'DATA after END_STREAM');
    const data = unpad(payload, flags, false);
    if (data === null) throw new H2ConnectionError(ERR_PROTOCOL, 'DATA padding exceeds the frame');
    const end = (flags & FLAG_END_STREAM) !== 0;
    if (end) this.remoteEnded(s);
    else {
      s.recvUnacked += len;
      if (s.recvUnacked >= this.opts.streamWindow / 2 && !s.creditHeld) {
        this.socket.write(windowUpdateFrame(id, s.recvUnacked));
        s.recvUnacked = 0;
      }
    }
    s.onData(data, end);
  }

  private remoteEnded(s: H2Stream): void {
    s.remoteClosed = true;
    if (s.localClosed) this.forget(s);
  }

  private forget(s: H2Stream): void {
    this.streams.delete(s.id);
    this.blocked.delete(s);
    if (this.streams.size === 0 && (this.goawaySent || this.goawayReceived) && !this.closed) this.onDrained?.();
  }

  /** Called when the last stream is gone after a GOAWAY either way (a graceful close finishes there). */
  onDrained: (() => void) | null = null;

  // ---- writing ----

  cork(): void {
    this.socket.cork();
  }

  /**
   * Holds writes until the current tick's microtasks have run: the answers of a coalesced batch
   * settle in one turn, so they leave in one writev instead of a write each (1.09 writes per
   * request at 16 callers before).
   */
  corkForTick(): void {
    if (this.tickCorked) return;
    this.tickCorked = true;
    this.socket.cork();
    process.nextTick(this.uncorkTick);
  }

  private readonly uncorkTick = (): void => {
    this.tickCorked = false;
    this.socket.uncork();
  };

  uncork(): void {
    this.socket.uncork();
  }

  /** Client: opens a stream; null when the connection cannot take more. */
  openStream(): H2Stream | null {
    if (this.closed || this.goawayReceived || this.nextStreamId > MAX_WINDOW) return null;
    const s = new H2Stream(this.nextStreamId, this.peerInitialWindow);
    this.nextStreamId += 2;
    this.streams.set(s.id, s);
    return s;
  }

  /** Whether openStream can go on (stream ids left, no GOAWAY, socket open). */
  get usable(): boolean {
    return !this.closed && !this.goawayReceived && !this.goawaySent && this.nextStreamId < MAX_WINDOW - 2;
  }

  /** A header block (already HPACK-encoded) as HEADERS plus CONTINUATIONs when it exceeds the peer's frame size. */
  writeHeaders(s: H2Stream, block: Buffer, endStream: boolean): void {
    if (this.closed || s.localClosed) return;
    const max = this.peerMaxFrameSize;
    const endFlag = endStream ? FLAG_END_STREAM : 0;
    if (block.length <= max) {
      const out = Buffer.allocUnsafe(9 + block.length);
      writeFrameHeader(out, 0, block.length, FRAME_HEADERS, FLAG_END_HEADERS | endFlag, s.id);
      block.copy(out, 9);
      this.socket.write(out);
    } else {
      for (let off = 0; off < block.length; off += max) {
        const part = block.subarray(off, Math.min(block.length, off + max));
        const last = off + max >= block.length;
        const type = off === 0 ? FRAME_HEADERS : FRAME_CONTINUATION;
        const fl = (off === 0 ? endFlag : 0) | (last ? FLAG_END_HEADERS : 0);
        this.socket.write(frame(type, fl, s.id, part));
      }
    }
    if (endStream) this.localEnded(s);
  }

  /**
   * A gRPC unary message in its usual shape (HEADERS, one DATA frame with the 5-byte prefix and
   * the message, then the trailers block, or END_STREAM on the DATA when `trailers` is null) as
   * one buffer and one write, when it fits the peer's frame size and windows and is small enough
   * that one copy is cheaper than several writes. Returns false, having written nothing, when it
   * does not: the caller then writes it piecewise (writeHeaders, writeData), flow-controlled.
   */
  tryWriteUnary(s: H2Stream, headerParts: readonly Buffer[], body: Buffer, trailers: Buffer | null): boolean {
    if (this.closed || s.localClosed || s.queue !== null) return false;
    const max = this.peerMaxFrameSize;
    let hlen = 0;
    for (const p of headerParts) hlen += p.length;
    const dlen = 5 + body.length;
    const tlen = trailers === null ? 0 : trailers.length;
    if (hlen > max || dlen > max || tlen > max || dlen > 65_536) return false;
    if (dlen > s.sendWindow || dlen > this.sendWindow) return false;
    const out = Buffer.allocUnsafe(9 + hlen + 9 + dlen + (trailers === null ? 0 : 9 + tlen));
    writeFrameHeader(out, 0, hlen, FRAME_HEADERS, FLAG_END_HEADERS, s.id);
    let off = 9;
    for (const p of headerParts) off += p.copy(out, off);
    writeFrameHeader(out, off, dlen, FRAME_DATA, trailers === null ? FLAG_END_STREAM : 0, s.id);
    off += 9;
    out[off] = 0;
    out.writeUInt32BE(body.length, off + 1);
    off += 5 + body.copy(out, off + 5);
    if (trailers !== null) {
      writeFrameHeader(out, off, tlen, FRAME_HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, s.id);
      trailers.copy(out, off + 9);
    }
    s.sendWindow -= dlen;
    this.sendWindow -= dlen;
    this.socket.write(out);
    this.localEnded(s);
    return true;
  }

  /**
   * DATA, as much as the peer's windows allow now, the rest queued until WINDOW_UPDATE. With
   * `trailers` the stream then ends with that header block; with `endStream` the last DATA
   * frame ends it.
   */
  writeData(s: H2Stream, data: Buffer, endStream: boolean, trailers: Buffer | null = null): void {
    if (this.closed || s.localClosed) return;
    if (s.queue !== null) {
      s.queue.push(data);
    } else {
      s.queue = [data];
    }
    s.queuedBytes += data.length;
    s.queuedEnd = endStream;
    s.queuedTrailers = trailers;
    this.flushStream(s);
  }

  /** Ends the stream with a trailers block, after any DATA still waiting for window. */
  endWithTrailers(s: H2Stream, block: Buffer): void {
    if (this.closed || s.localClosed) return;
    if (s.queue === null) return this.writeHeaders(s, block, true);
    s.queuedEnd = true;
    s.queuedTrailers = block;
  }

  /** Small DATA that fits both windows and one frame, written with its header in one buffer. */
  private flushStream(s: H2Stream): void {
    const q = s.queue!;
    const max = this.peerMaxFrameSize;
    while (q.length > 0) {
      const head = q[0]!;
      const room = Math.min(s.sendWindow, this.sendWindow, max);
      if (room <= 0 && head.length > 0) {
        this.blocked.add(s);
        return;
      }
      const n = Math.min(room, head.length);
      const lastPiece = n === head.length && q.length === 1;
      const endFlag = lastPiece && s.queuedEnd && s.queuedTrailers === null ? FLAG_END_STREAM : 0;
      if (n <= 16_384) {
        const out = Buffer.allocUnsafe(9 + n);
        writeFrameHeader(out, 0, n, FRAME_DATA, endFlag, s.id);
        head.copy(out, 9, 0, n);
        this.socket.write(out);
      } else {
        const hdr = Buffer.allocUnsafe(9);
        writeFrameHeader(hdr, 0, n, FRAME_DATA, endFlag, s.id);
        this.socket.write(hdr);
        this.socket.write(head.subarray(0, n));
      }
      s.sendWindow -= n;
      this.sendWindow -= n;
      s.queuedBytes -= n;
      if (n === head.length) q.shift();
      else q[0] = head.subarray(n);
    }
    s.queue = null;
    this.blocked.delete(s);
    s.onDrain();
    if (s.queuedTrailers !== null) {
      const t = s.queuedTrailers;
      s.queuedTrailers = null;
      this.writeHeaders(s, t, true);
    } else if (s.queuedEnd) this.localEnded(s);
  }

  private flushBlocked(): void {
    for (const s of [...this.blocked]) {
      if (this.sendWindow <= 0) return;
      this.flushStream(s);
    }
  }

  private localEnded(s: H2Stream): void {
    s.localClosed = true;
    if (s.remoteClosed) this.forget(s);
    else if (this.opts.role === 'server') {
      // The answer is complete before the request was: tell the client to stop sending (RFC 9113 8.1).
      this.socket.write(rstStreamFrame(s.id, ERR_NO_ERROR));
      s.remoteClosed = true;
      this.forget(s);
    }
  }

  /**
   * Stops crediting the peer's window for this stream: it may send what it was already given and
   * no more. For a stream whose answers back up (a client that sends but does not read), this is
   * the flow control that keeps the server's memory bounded.
   */
  holdCredit(s: H2Stream): void {
    s.creditHeld = true;
  }

  /** Credits what arrived while the credit was held, so the peer may send again. */
  releaseCredit(s: H2Stream): void {
    if (!s.creditHeld) return;
    s.creditHeld = false;
    if (this.closed || s.remoteClosed || s.recvUnacked === 0) return;
    this.socket.write(windowUpdateFrame(s.id, s.recvUnacked));
    s.recvUnacked = 0;
  }

  /** Bytes written to the socket that it has not handed to the kernel yet. */
  get socketBacklog(): number {
    return this.socket.writableLength;
  }

  /** Ends a stream with RST_STREAM and forgets it (its owner is told through onReset). */
  resetStream(s: H2Stream, code: number, why: string): void {
    if (s.resetCode !== -1 || (s.localClosed && s.remoteClosed)) return;
    s.resetCode = code;
    s.localClosed = s.remoteClosed = true;
    if (!this.closed) this.socket.write(rstStreamFrame(s.id, code));
    this.forget(s);
    s.onReset(code, why);
  }

  /** Graceful: GOAWAY with the last stream processed; streams in flight go on. */
  goaway(code = ERR_NO_ERROR): void {
    if (this.closed || this.goawaySent) return;
    this.goawaySent = true;
    this.socket.write(goawayFrame(this.lastPeerStreamId, code));
  }

  destroy(): void {
    this.socket.destroy();
    this.teardown(null);
  }

  /** Flushes what was written (the last answers), then closes; streams left end on 'close'. */
  end(): void {
    this.socket.end();
  }

  private teardown(err: Error | null): void {
    if (this.closed) return;
    this.closed = true;
    const why = err?.message ?? 'the connection closed';
    for (const s of [...this.streams.values()]) {
      this.streams.delete(s.id);
      if (s.resetCode === -1) s.onReset(-1, why);
    }
    this.blocked.clear();
    this.hooks.onClose?.(err);
  }
}
