/**
 * A gRPC server on HTTP/2 frames spoken directly on the socket (frame/): no node:http2 session or
 * stream objects, one small state object per call. Plaintext with prior knowledge (as KServe
 * clients connect), or TLS with ALPN h2 when given TLS options. A unary method's one message is
 * handed to its handler as raw bytes and the raw answer written back with its status trailers,
 * the answer's fixed header blocks encoded once per process; a streaming method's handler gets
 * each message as it completes and writes answers as it likes, then the status. Paths not
 * registered answer UNIMPLEMENTED. Closing stops new connections, sends GOAWAY, lets calls in
 * flight finish, and cuts what is left after a grace.
 */
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TlsOptions, type TLSSocket } from 'node:tls';
import { MAX_TIMER_MS, setClampedTimeout } from '../timers.js';
import {
  encodeGrpcMessage,
  forwardableList,
  type GrpcHeaders,
  inflateMessage,
  parseGrpcTimeout,
  type RawAnswer,
  unframeUnary,
  writeMessage,
} from './grpc-wire.js';
import { ERR_REFUSED_STREAM } from './frame/frame-codec.js';
import { H2Connection, type H2Stream } from './frame/connection.js';
import { encodeHeaders, type HeaderList } from './frame/hpack.js';

// gRPC status codes this file answers with (the numbers are the protocol's).
const OK = 0;
const UNKNOWN = 2;
const DEADLINE_EXCEEDED = 4;
const RESOURCE_EXHAUSTED = 8;
const UNIMPLEMENTED = 12;
const INTERNAL = 13;

interface CallHead {
  /** The client's own metadata (transport headers left out). */
  readonly metadata: GrpcHeaders;
  /** Epoch ms (Date.now's clock) from the client's grpc-timeout, or null. */
  readonly deadlineMs: number | null;
  /** Registers `cancel` to run if the call ends before its answer (reset, connection gone, deadline). */
  onCancel(cancel: () => void): void;
}

export interface UnaryCall extends CallHead {
  /** The request message, without its prefix (inflated if the client compressed it). */
  readonly request: Buffer;
}

export type UnaryHandler = (call: UnaryCall) => Promise<RawAnswer> | RawAnswer;

export interface StreamCall extends CallHead {
  /** Set by the handler: each request message in order, without its prefix (inflated). */
  onMessage: (message: Buffer) => void;
  /** Set by the handler: the client has sent its last message. */
  onEnd: () => void;
  /** One answer message (the response headers go out before the first). */
  write(message: Buffer): void;
  /** Ends the call with a status (0: OK); later writes are dropped. */
  finish(code: number, details?: string): void;
  /** The call has ended (finished, reset, or its connection gone). */
  readonly ended: boolean;
}

export type StreamHandler = (call: StreamCall) => void;

/** A unary method is a function; a streaming one (client, server or both ways) is `{ stream }`. */
export type MethodHandler = UnaryHandler | { readonly stream: StreamHandler };

export interface FrameServerOptions {
  /** Largest request message (grpc.max_receive_message_length): past it RESOURCE_EXHAUSTED. */
  readonly maxRecvBytes: number;
  /** Largest answer message: past it RESOURCE_EXHAUSTED instead of the answer. Default: no limit. */
  readonly maxSendBytes?: number;
  /** node:tls server options (certificate, key, client CA); null or absent: plaintext. */
  readonly tls?: TlsOptions | null;
  /**
   * Answer DEADLINE_EXCEEDED (and cancel the call) when the client's deadline passes before the
   * answer, as a gRPC server does. A proxy that forwards the deadline leaves it to the next hop.
   */
  readonly deadlineTimers?: boolean;
  /** Closes a connection that has not sent its preface and SETTINGS by then (ms). */
  readonly handshakeMs?: number;
  /** Names the server in UNIMPLEMENTED's details. */
  readonly name?: string;
}

export interface FrameServerHandle {
  readonly server: NetServer | TlsServer;
  readonly port: number;
  /** Stops taking connections, lets calls in flight finish, cuts what is left after `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

const STREAM_WINDOW = 4 * 2 ** 20;
const SESSION_WINDOW = 64 * 2 ** 20;
/** Our SETTINGS_MAX_FRAME_SIZE: large DATA frames cost fewer headers and reads for big tensors. */
const MAX_FRAME_SIZE = 1 << 20;
const MAX_HEADER_LIST_BYTES = 64 * 1024;
/**
 * Streams one client connection may hold open: above any in-flight cap a server here answers
 * RESOURCE_EXHAUSTED past (the gateway's default is 1024), so it never limits a real client, while
 * a client that opens streams and never finishes them cannot grow memory without bound.
 */
const MAX_STREAMS_PER_CONNECTION = 4096;
/**
 * Answer bytes one stream may have waiting for the client (its window, then the socket) before the
 * server stops crediting that stream's receive window: a bidi client that keeps sending and never
 * reads its answers is then held by flow control instead of growing the server's memory.
 */
const STREAM_BACKLOG_BYTES = 8 * 2 ** 20;
/**
 * A connection that has not sent its preface and SETTINGS by then is closed: a socket that never
 * speaks would otherwise hold a descriptor and its buffers for as long as the peer likes.
 */
const HANDSHAKE_MS = 10_000;

// The blocks every OK answer sends, encoded once (the encoder is stateless).
const OK_HEADERS = encodeHeaders([
  ':status',
  '200',
  'content-type',
  'application/grpc',
  'grpc-accept-encoding',
  'identity,deflate,gzip',
]);
const OK_TRAILERS = encodeHeaders(['grpc-status', '0']);

function consumeSizeUpdate(conn: H2Connection): boolean {
  const p = conn.sizeUpdatePending;
  conn.sizeUpdatePending = false;
  return p;
}

function sizeUpdate(conn: H2Connection, block: Buffer): Buffer {
  if (!consumeSizeUpdate(conn)) return block;
  return Buffer.concat([Buffer.of(0x20), block]);
}

/** A status with no answer message: one HEADERS frame that ends the stream. */
function trailersOnly(conn: H2Connection, s: H2Stream, code: number, details: string, http = 200): void {
  if (s.localClosed || s.resetCode !== -1) return;
  const list: HeaderList =
    http === 200
      ? [
          ':status',
          '200',
          'content-type',
          'application/grpc',
          'grpc-status',
          String(code),
          'grpc-message',
          encodeGrpcMessage(details),
        ]
      : [':status', String(http)];
  conn.writeHeaders(s, encodeHeaders(list, consumeSizeUpdate(conn)), true);
}

function statusTrailers(conn: H2Connection, code: number, details: string): Buffer {
  if (code === OK && !conn.sizeUpdatePending) return OK_TRAILERS;
  const list: HeaderList = ['grpc-status', String(code)];
  if (details !== '') list.push('grpc-message', encodeGrpcMessage(details));
  return encodeHeaders(list, consumeSizeUpdate(conn));
}

/** The request's pseudo-headers and the few gRPC headers the server reads, in one pass. */
interface RequestHead {
  method: string;
  path: string;
  contentType: string;
  timeout: string | undefined;
  encoding: string | undefined;
}

function readHead(list: HeaderList): RequestHead {
  const h: RequestHead = { method: '', path: '', contentType: '', timeout: undefined, encoding: undefined };
  for (let i = 0; i < list.length; i += 2) {
    const k = list[i]!;
    const v = list[i + 1]!;
    if (k === ':method') h.method = v;
    else if (k === ':path') h.path = v;
    else if (k === 'content-type') h.contentType = v;
    else if (k === 'grpc-timeout') h.timeout = v;
    else if (k === 'grpc-encoding') h.encoding = v;
  }
  return h;
}

/**
 * The call's deadline in epoch ms: null without grpc-timeout, and null for one further away than
 * a timer can wait (about 24.8 days: no practical deadline, and no timer that would wrap);
 * undefined for a malformed header.
 */
function deadlineOf(timeout: string | undefined, arrival: number): number | null | undefined {
  if (timeout === undefined) return null;
  const ms = parseGrpcTimeout(timeout);
  if (ms === null) return undefined;
  return ms > MAX_TIMER_MS ? null : arrival + ms;
}

export async function listenGrpcFrames(
  methods: ReadonlyMap<string, MethodHandler>,
  host: string,
  port: number,
  opts: FrameServerOptions,
): Promise<FrameServerHandle> {
  const handshakeMs = opts.handshakeMs ?? HANDSHAKE_MS;
  const maxRecv = opts.maxRecvBytes;
  const maxSend = opts.maxSendBytes ?? Infinity;
  const timers = opts.deadlineTimers ?? false;
  const name = opts.name ?? 'this server';
  const connections = new Set<H2Connection>();
  let closing = false;
  /**
   * What one connection's unfinished requests may hold (as node:http2's maxSessionMemory did):
   * room for two of the largest messages, or 64 MiB. A DATA frame past it fails its call with
   * RESOURCE_EXHAUSTED rather than let one client's many half-sent calls grow without bound.
   */
  const heldBudget = Math.max(SESSION_WINDOW, 2 * (maxRecv + 5));
  const overBudget = `the connection's unfinished requests would hold more than ${heldBudget} bytes`;
  const tooLarge = (n: number) => `Received message larger than max (${n} vs. ${maxRecv})`;

  const onStream = (conn: H2Connection, s: H2Stream, list: HeaderList, endStream: boolean): void => {
    const head = readHead(list);
    if (head.method !== 'POST' || !head.contentType.startsWith('application/grpc'))
      return trailersOnly(conn, s, 0, '', 415);
    const handler = methods.get(head.path);
    if (handler === undefined)
      return trailersOnly(conn, s, UNIMPLEMENTED, `method ${head.path} is not served by ${name}`);
    const deadlineMs = deadlineOf(head.timeout, Date.now());
    if (deadlineMs === undefined)
      return trailersOnly(conn, s, INTERNAL, `Invalid grpc-timeout value "${head.timeout}"`);
    let cancels: (() => void)[] | null = null;
    let timer: NodeJS.Timeout | null = null;
    const cancelAll = () => {
      if (cancels === null) return;
      const cs = cancels;
      cancels = null;
      for (const c of cs) c();
    };
    const clearDeadline = () => {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    };
    const metadata = forwardableList(list);
    const onCancel = (cancel: () => void) => {
      (cancels ??= []).push(cancel);
    };
    // Request bytes held for a message not complete yet, counted in conn.held.
    const chunks: Buffer[] = [];
    let size = 0;
    let holding = 0;
    const release = () => {
      conn.held -= holding;
      holding = 0;
      chunks.length = 0;
      size = 0;
    };
    /** Takes a chunk into the held bytes; false (having answered) when a limit refuses it. */
    const hold = (c: Buffer, fail: (code: number, details: string) => void): boolean => {
      if (conn.held + c.length > heldBudget) {
        release();
        fail(RESOURCE_EXHAUSTED, overBudget);
        return false;
      }
      chunks.push(c);
      size += c.length;
      holding += c.length;
      conn.held += c.length;
      return true;
    };
    const onDeadline = (fail: (code: number, details: string) => void) => {
      if (!timers || deadlineMs === null) return;
      timer = setClampedTimeout(() => {
        timer = null;
        fail(DEADLINE_EXCEEDED, 'Deadline exceeded');
      }, deadlineMs - Date.now());
    };

    if (typeof handler === 'function') {
      let taken = false;
      let answered = false;
      const fail = (code: number, details: string) => {
        if (answered) return;
        answered = true;
        taken = true;
        clearDeadline();
        release();
        cancelAll();
        trailersOnly(conn, s, code, details);
      };
      const answer = (a: RawAnswer) => {
        if (answered) return;
        answered = true;
        clearDeadline();
        cancels = null;
        if (s.localClosed || s.resetCode !== -1) return;
        try {
          conn.corkForTick();
          if (!a.ok) trailersOnly(conn, s, a.code ?? UNKNOWN, a.details ?? '');
          else if (a.body!.length > maxSend)
            trailersOnly(
              conn,
              s,
              RESOURCE_EXHAUSTED,
              `Sent message larger than max (${a.body!.length} vs. ${maxSend})`,
            );
          else {
            const headers = sizeUpdate(conn, OK_HEADERS);
            if (!conn.tryWriteUnary(s, [headers], a.body!, OK_TRAILERS)) {
              conn.writeHeaders(s, headers, false);
              writeMessage(conn, s, a.body!, OK_TRAILERS);
            }
          }
        } catch (err) {
          // A fault here concerns this connection only, never the process.
          conn.fail(err);
        }
      };
      const start = (message: Buffer) => {
        const call: UnaryCall = { request: message, deadlineMs, metadata, onCancel };
        let result: Promise<RawAnswer> | RawAnswer;
        try {
          result = handler(call);
        } catch (err) {
          return fail(INTERNAL, (err as Error).message);
        }
        if (result instanceof Promise)
          result.then(answer, (err: Error) => answer({ ok: false, code: INTERNAL, details: err.message }));
        else answer(result);
      };
      /** Bytes of the whole message with its prefix, once the prefix is in. */
      let expected = -1;
      // The call starts as soon as its one message is complete; END_STREAM normally rides on the
      // same DATA frame anyway.
      const take = () => {
        if (taken) return;
        taken = true;
        const m = unframeUnary(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), head.encoding, maxRecv);
        release();
        if (!m.ok) return fail(m.code ?? INTERNAL, m.error);
        start(m.message);
      };
      s.onData = (c, end) => {
        if (!taken && c.length > 0) {
          if (!hold(c, fail)) return;
          if (expected < 0 && size >= 5) {
            const h = chunks[0]!.length >= 5 ? chunks[0]! : Buffer.concat(chunks, size);
            const len = h.readUInt32BE(1);
            if (len > maxRecv) return fail(RESOURCE_EXHAUSTED, tooLarge(len));
            expected = 5 + len;
          }
          if (size > expected && expected >= 0) return take(); // refused there: more than one message
          if (size === expected) take();
        }
        if (end) take();
      };
      // Trailers from a client are not part of gRPC requests; they only end the stream.
      s.onHeaders = (_l, end) => {
        if (end) take();
      };
      s.onReset = () => {
        clearDeadline();
        release();
        if (!answered) {
          answered = true;
          cancelAll();
        }
      };
      onDeadline(fail);
      if (endStream) take();
      return;
    }

    // A streaming method: messages cut from DATA as they complete, answers written as they come.
    let ended = false;
    let headersSent = false;
    let expected = -1;
    const finish = (code: number, details = '') => {
      if (ended) return;
      ended = true;
      clearDeadline();
      release();
      if (code !== OK) cancelAll();
      cancels = null;
      if (s.localClosed || s.resetCode !== -1) return;
      try {
        if (!headersSent) trailersOnly(conn, s, code, details);
        else conn.endWithTrailers(s, statusTrailers(conn, code, details));
      } catch (err) {
        conn.fail(err);
      }
    };
    // Answers backed up behind a client that does not read: stop crediting its window, so it can
    // send no more requests until it has taken its answers (memory stays bounded).
    const holdUntilDrained = (): void => {
      conn.holdCredit(s);
      const check = (): void => {
        s.onDrain = () => {};
        if (ended || s.resetCode !== -1) return;
        if (s.queuedBytes > 0) s.onDrain = check;
        else if (conn.socketBacklog > STREAM_BACKLOG_BYTES / 2) conn.socket.once('drain', check);
        else conn.releaseCredit(s);
      };
      check();
    };
    const call: StreamCall = {
      metadata,
      deadlineMs,
      onCancel,
      onMessage: () => {},
      onEnd: () => finish(OK),
      write: (message) => {
        if (ended || s.localClosed || s.resetCode !== -1) return;
        if (message.length > maxSend)
          return finish(RESOURCE_EXHAUSTED, `Sent message larger than max (${message.length} vs. ${maxSend})`);
        try {
          conn.cork();
          if (!headersSent) {
            headersSent = true;
            conn.writeHeaders(s, sizeUpdate(conn, OK_HEADERS), false);
          }
          writeMessage(conn, s, message, null, false);
          conn.uncork();
        } catch (err) {
          conn.fail(err);
          return;
        }
        if (!s.creditHeld && s.queuedBytes + conn.socketBacklog > STREAM_BACKLOG_BYTES) holdUntilDrained();
      },
      finish,
      get ended() {
        return ended;
      },
    };
    const deliver = () => {
      for (;;) {
        if (expected < 0) {
          if (size < 5) return;
          const h = chunks[0]!.length >= 5 ? chunks[0]! : Buffer.concat(chunks, size);
          const len = h.readUInt32BE(1);
          if (len > maxRecv) return finish(RESOURCE_EXHAUSTED, tooLarge(len));
          expected = 5 + len;
        }
        if (size < expected) return;
        const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        const flag = all[0]!;
        const body = all.subarray(5, expected);
        const rest = all.subarray(expected);
        const n = expected;
        expected = -1;
        chunks.length = 0;
        size = 0;
        conn.held -= n;
        holding -= n;
        if (rest.length > 0) {
          chunks.push(rest);
          size = rest.length;
        }
        const m = inflateMessage(flag, body, head.encoding, maxRecv);
        if (!m.ok) return finish(m.code ?? INTERNAL, m.error);
        try {
          call.onMessage(m.message);
        } catch (err) {
          return finish(INTERNAL, (err as Error).message);
        }
        if (ended) return;
      }
    };
    s.onData = (c, end) => {
      if (ended) return;
      if (c.length > 0) {
        if (!hold(c, finish)) return;
        deliver();
        if (ended) return;
      }
      if (end) {
        if (size > 0) return finish(INTERNAL, `the stream ended inside a message (${size} bytes of it)`);
        call.onEnd();
      }
    };
    s.onHeaders = (_l, end) => {
      if (end && !ended) {
        if (size > 0) return finish(INTERNAL, `the stream ended inside a message (${size} bytes of it)`);
        call.onEnd();
      }
    };
    s.onReset = () => {
      clearDeadline();
      release();
      if (!ended) {
        ended = true;
        cancelAll();
      }
    };
    onDeadline(finish);
    try {
      handler.stream(call);
    } catch (err) {
      return finish(INTERNAL, (err as Error).message);
    }
    if (endStream && !ended) call.onEnd();
  };

  const accept = (socket: Socket): void => {
    // Small frames go out at once (no Nagle wait behind an unacknowledged one).
    socket.setNoDelay(true);
    if (closing) {
      socket.destroy();
      return;
    }
    const conn: H2Connection = new H2Connection(
      socket,
      {
        role: 'server',
        streamWindow: STREAM_WINDOW,
        connectionWindow: heldBudget,
        maxFrameSize: MAX_FRAME_SIZE,
        maxHeaderListBytes: MAX_HEADER_LIST_BYTES,
        maxConcurrentStreams: MAX_STREAMS_PER_CONNECTION,
      },
      {
        onStream: (s, list, end) => {
          try {
            onStream(conn, s, list, end);
          } catch (err) {
            conn.resetStream(s, ERR_REFUSED_STREAM, (err as Error).message);
          }
        },
        onClose: () => connections.delete(conn),
      },
    );
    connections.add(conn);
    const handshake = setClampedTimeout(() => {
      if (!conn.settingsReceived) conn.destroy();
    }, handshakeMs);
    handshake.unref();
    socket.once('close', () => clearTimeout(handshake));
  };

  const server: NetServer | TlsServer =
    opts.tls === undefined || opts.tls === null
      ? createNetServer({ noDelay: true }, accept)
      : createTlsServer({ ...opts.tls, ALPNProtocols: ['h2'] }, (socket: TLSSocket) => {
          // A client that did not agree on h2 (ALPN) is not spoken to.
          if (socket.alpnProtocol !== 'h2') {
            socket.destroy();
            return;
          }
          accept(socket);
        });
  // A failed TLS handshake concerns that client only.
  server.on('tlsClientError', () => {});

  const bound = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as { port: number }).port);
    });
  });
  return {
    server,
    port: bound,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        closing = true;
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve();
        };
        const timer = setClampedTimeout(() => {
          for (const c of connections) c.destroy();
          finish();
        }, graceMs);
        timer.unref();
        // Graceful: GOAWAY to every client, then each connection closes once its streams finish.
        for (const c of [...connections]) {
          c.onDrained = () => c.end();
          c.goaway();
          if (c.streams.size === 0) c.end();
        }
        // Resolves once every connection is gone (net.Server counts them).
        server.close(finish);
      }),
  };
}
