/**
 * A gRPC server for unary methods on HTTP/2 frames spoken directly on the socket (frame/): no
 * node:http2 session or stream objects, one small state object per call. Plaintext with prior
 * knowledge (as KServe clients connect), or TLS with ALPN h2 when given a certificate. Each
 * stream's one message is handed to the method's handler as raw bytes, and the handler's raw
 * answer is written back with its status trailers, the answer's fixed header blocks encoded once
 * per process. Methods not registered (and streaming ones) answer UNIMPLEMENTED. Closing stops new
 * connections, sends GOAWAY, lets calls in flight finish, and cuts what is left after a grace.
 */
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import { status as Status } from '@grpc/grpc-js';
import { setClampedTimeout } from '@hloserve/common/timers';
import { parseGrpcTimeout } from '../routing/deadline.js';
import { encodeGrpcMessage, forwardableList, type GrpcHeaders, unframeUnary, writeMessage } from './grpc-wire.js';
import type { RawAnswer } from './worker-channel.js';
import { secureOptions, type GatewayTls } from '../tls.js';
import { ERR_REFUSED_STREAM } from './frame/frame-codec.js';
import { H2Connection, type H2Stream } from './frame/connection.js';
import { encodeHeaders, type HeaderList } from './frame/hpack.js';

export interface UnaryCall {
  /** The request message, without its prefix (inflated if the client compressed it). */
  readonly request: Buffer;
  /** Epoch ms from the client's grpc-timeout, or null. */
  readonly deadlineMs: number | null;
  /** The client's own metadata, to forward. */
  readonly metadata: GrpcHeaders;
  /** Registers `cancel` to run if the client resets the stream before the answer. */
  onCancel(cancel: () => void): void;
}

export type UnaryHandler = (call: UnaryCall) => Promise<RawAnswer> | RawAnswer;

export interface UnaryServerHandle {
  readonly server: NetServer | TlsServer;
  readonly port: number;
  close(graceMs?: number): Promise<void>;
}

const STREAM_WINDOW = 4 * 2 ** 20;
const SESSION_WINDOW = 64 * 2 ** 20;
/** Our SETTINGS_MAX_FRAME_SIZE: large DATA frames cost fewer headers and reads for big tensors. */
const MAX_FRAME_SIZE = 1 << 20;
const MAX_HEADER_LIST_BYTES = 64 * 1024;
/**
 * Streams one client connection may hold open: above the gateway's default in-flight cap (1024,
 * which answers RESOURCE_EXHAUSTED past it), so it never limits a real client, while a client
 * that opens streams and never finishes them cannot grow the gateway's memory without bound.
 */
const MAX_STREAMS_PER_CONNECTION = 4096;
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

function sizeUpdate(conn: H2Connection, block: Buffer): Buffer {
  if (!conn.sizeUpdatePending) return block;
  conn.sizeUpdatePending = false;
  return Buffer.concat([Buffer.of(0x20), block]);
}

function trailersOnly(conn: H2Connection, s: H2Stream, code: number, details: string, http = 200): void {
  if (s.localClosed) return;
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

function consumeSizeUpdate(conn: H2Connection): boolean {
  const p = conn.sizeUpdatePending;
  conn.sizeUpdatePending = false;
  return p;
}

function answer(conn: H2Connection, s: H2Stream, a: RawAnswer): void {
  if (s.localClosed || s.resetCode !== -1) return;
  try {
    answerNow(conn, s, a);
  } catch (err) {
    // A fault here concerns this connection only, never the process.
    conn.fail(err);
  }
}

function answerNow(conn: H2Connection, s: H2Stream, a: RawAnswer): void {
  conn.cork();
  if (!a.ok) trailersOnly(conn, s, a.code ?? Status.UNKNOWN, a.details ?? '');
  else {
    const head = sizeUpdate(conn, OK_HEADERS);
    if (!conn.tryWriteUnary(s, [head], a.body!, OK_TRAILERS)) {
      conn.writeHeaders(s, head, false);
      writeMessage(conn, s, a.body!, OK_TRAILERS);
    }
  }
  conn.uncork();
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

export async function listenUnaryGrpc(
  methods: ReadonlyMap<string, UnaryHandler>,
  host: string,
  port: number,
  maxMessageBytes: number,
  tls: GatewayTls | null = null,
  limits: { readonly handshakeMs?: number } = {},
): Promise<UnaryServerHandle> {
  const handshakeMs = limits.handshakeMs ?? HANDSHAKE_MS;
  const connections = new Set<H2Connection>();
  let closing = false;
  /**
   * What one connection's unfinished requests may hold (as node:http2's maxSessionMemory did):
   * room for two of the largest messages, or 64 MiB. A DATA frame past it fails its call with
   * RESOURCE_EXHAUSTED rather than let one client's many half-sent calls grow without bound.
   */
  const heldBudget = Math.max(SESSION_WINDOW, 2 * (maxMessageBytes + 5));

  const onStream = (conn: H2Connection, s: H2Stream, list: HeaderList, endStream: boolean): void => {
    const head = readHead(list);
    if (head.method !== 'POST' || !head.contentType.startsWith('application/grpc'))
      return trailersOnly(conn, s, 0, '', 415);
    const handler = methods.get(head.path);
    if (!handler)
      return trailersOnly(conn, s, Status.UNIMPLEMENTED, `method ${head.path} is not served by the gateway`);
    const arrival = Date.now();
    const timeoutMs = head.timeout !== undefined ? parseGrpcTimeout(head.timeout) : null;
    const deadlineMs = timeoutMs === null ? null : arrival + timeoutMs;
    const chunks: Buffer[] = [];
    let size = 0;
    /** Bytes of the whole message with its prefix, once the prefix is in. */
    let expected = -1;
    let taken = false;
    let cancels: (() => void)[] | null = null;
    /** Bytes of this call's message counted in conn.held until the message is taken or dropped. */
    let holding = 0;
    const release = () => {
      conn.held -= holding;
      holding = 0;
      chunks.length = 0;
    };
    // The call starts as soon as its one message is complete; END_STREAM normally rides on the
    // same DATA frame anyway.
    const take = () => {
      if (taken) return;
      taken = true;
      const m = unframeUnary(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), head.encoding);
      release();
      if (!m.ok) return trailersOnly(conn, s, Status.INTERNAL, m.error);
      start(m.message);
    };
    s.onData = (c, end) => {
      if (!taken && c.length > 0) {
        if (conn.held + c.length > heldBudget) {
          taken = true;
          release();
          trailersOnly(
            conn,
            s,
            Status.RESOURCE_EXHAUSTED,
            `the connection's unfinished requests would hold more than ${heldBudget} bytes`,
          );
          return;
        }
        if (size + c.length > maxMessageBytes + 5) {
          size += c.length;
          taken = true;
          release();
          trailersOnly(
            conn,
            s,
            Status.RESOURCE_EXHAUSTED,
            `Received message larger than max (${size - 5} vs. ${maxMessageBytes})`,
          );
          return;
        }
        size += c.length;
        holding += c.length;
        conn.held += c.length;
        chunks.push(c);
        if (expected < 0 && size >= 5) {
          const h = chunks[0]!.length >= 5 ? chunks[0]! : Buffer.concat(chunks, size);
          expected = 5 + h.readUInt32BE(1);
        }
        if (size === expected) take();
      }
      if (end) take();
    };
    // Trailers from a client are not part of gRPC unary requests; they only end the stream.
    s.onHeaders = (_l, end) => {
      if (end) take();
    };
    s.onReset = () => {
      release();
      if (cancels !== null && !s.localClosed) for (const c of cancels) c();
    };
    const start = (message: Buffer) => {
      const call: UnaryCall = {
        request: message,
        deadlineMs,
        metadata: forwardableList(list),
        onCancel: (cancel) => (cancels ??= []).push(cancel),
      };
      let result: Promise<RawAnswer> | RawAnswer;
      try {
        result = handler(call);
      } catch (err) {
        return trailersOnly(conn, s, Status.INTERNAL, (err as Error).message);
      }
      if (result instanceof Promise)
        result.then(
          (a) => answer(conn, s, a),
          (err: Error) => answer(conn, s, { ok: false, code: Status.INTERNAL, details: err.message }),
        );
      else answer(conn, s, result);
    };
    if (endStream) take();
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
        connectionWindow: Math.max(SESSION_WINDOW, 2 * (maxMessageBytes + 5)),
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
    tls === null
      ? createNetServer({ noDelay: true }, accept)
      : createTlsServer({ ...secureOptions(tls), ALPNProtocols: ['h2'] }, (socket: TLSSocket) => {
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
