/**
 * A gRPC server for unary methods on node:http2 (plaintext with prior knowledge, as KServe clients
 * connect, or TLS with ALPN h2 when given a certificate): each stream's one message is handed to the method's handler as raw bytes, and the
 * handler's raw answer is written back with its status trailers. Methods not registered (and
 * streaming ones) answer UNIMPLEMENTED. Closing stops new connections, lets calls in flight
 * finish, and cuts what is left after a grace.
 */
import {
  createSecureServer,
  createServer,
  type Http2SecureServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import type { Socket } from 'node:net';
import { status as Status } from '@grpc/grpc-js';
import { setClampedTimeout } from '@hloserve/common/timers';
import { parseGrpcTimeout } from '../routing/deadline.js';
import { encodeGrpcMessage, forwardableHeaders, type GrpcHeaders, unframeUnary, writeMessage } from './grpc-wire.js';
import type { RawAnswer } from './worker-channel.js';
import { secureOptions, type GatewayTls } from '../tls.js';

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
  readonly server: Http2Server | Http2SecureServer;
  readonly port: number;
  close(graceMs?: number): Promise<void>;
}

const STREAM_WINDOW = 4 * 2 ** 20;
const SESSION_WINDOW = 64 * 2 ** 20;

// Shared per-answer objects: node:http2 copies headers before it maps them, so one frozen object
// serves every call (no allocation per call). No `date` header: gRPC clients do not read it.
const OK_HEADERS = Object.freeze({
  ':status': 200,
  'content-type': 'application/grpc',
  'grpc-accept-encoding': 'identity,deflate,gzip',
});
const OK_TRAILERS = Object.freeze({ 'grpc-status': '0' });
const WITH_TRAILERS = Object.freeze({ waitForTrailers: true, sendDate: false });
const END_STREAM = Object.freeze({ endStream: true, sendDate: false });
const ignore = (): void => {};
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

function trailersOnly(stream: ServerHttp2Stream, code: number, details: string): void {
  if (stream.headersSent || stream.destroyed) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': encodeGrpcMessage(details),
    },
    END_STREAM,
  );
}

function answer(stream: ServerHttp2Stream, a: RawAnswer): void {
  if (stream.destroyed || stream.headersSent) return;
  if (!a.ok) return trailersOnly(stream, a.code ?? Status.UNKNOWN, a.details ?? '');
  stream.respond(OK_HEADERS, WITH_TRAILERS);
  stream.once('wantTrailers', sendOkTrailers);
  writeMessage(stream, a.body!);
}

export async function listenUnaryGrpc(
  methods: ReadonlyMap<string, UnaryHandler>,
  host: string,
  port: number,
  maxMessageBytes: number,
  tls: GatewayTls | null = null,
): Promise<UnaryServerHandle> {
  const h2Options = {
    settings: { initialWindowSize: STREAM_WINDOW },
    maxSessionMemory: Math.max(64, Math.ceil((2 * maxMessageBytes) / 2 ** 20)),
  };
  const server: Http2Server | Http2SecureServer =
    tls === null
      ? createServer(h2Options)
      : createSecureServer({ ...h2Options, ...secureOptions(tls), ALPNProtocols: ['h2'], allowHTTP1: false });
  const sessions = new Set<Http2Session>();
  // Small frames go out at once (no Nagle wait behind an unacknowledged one).
  server.on('connection', (socket: Socket) => socket.setNoDelay(true));
  server.on('session', (s: Http2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
    s.on('error', ignore);
    s.once('connect', () => s.setLocalWindowSize(SESSION_WINDOW));
    // Already connected for server sessions: set the window at once too.
    if (!s.connecting) s.setLocalWindowSize(SESSION_WINDOW);
  });

  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', ignore);
    const handler = methods.get(headers[':path'] ?? '');
    const ct = headers['content-type'];
    if (headers[':method'] !== 'POST' || typeof ct !== 'string' || !ct.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, END_STREAM);
      return;
    }
    if (!handler) {
      trailersOnly(stream, Status.UNIMPLEMENTED, `method ${headers[':path']} is not served by the gateway`);
      return;
    }
    const arrival = Date.now();
    const t = headers['grpc-timeout'];
    const timeoutMs = typeof t === 'string' ? parseGrpcTimeout(t) : null;
    const deadlineMs = timeoutMs === null ? null : arrival + timeoutMs;
    const chunks: Buffer[] = [];
    let size = 0;
    /** Bytes of the whole message with its prefix, once the prefix is in. */
    let expected = -1;
    let taken = false;
    // The call starts as soon as its one message is complete, without waiting for the 'end'
    // event's extra tick; END_STREAM normally rides on the same DATA frame anyway.
    const take = () => {
      if (taken) return;
      taken = true;
      const enc = headers['grpc-encoding'] as string | undefined;
      const m = unframeUnary(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), enc);
      if (!m.ok) return trailersOnly(stream, Status.INTERNAL, m.error);
      start(m.message);
    };
    stream.on('data', (c: Buffer) => {
      if (taken) return;
      size += c.length;
      if (size > maxMessageBytes + 5) {
        taken = true;
        trailersOnly(
          stream,
          Status.RESOURCE_EXHAUSTED,
          `Received message larger than max (${size - 5} vs. ${maxMessageBytes})`,
        );
        return;
      }
      chunks.push(c);
      if (expected < 0 && size >= 5) {
        const head = chunks[0]!.length >= 5 ? chunks[0]! : Buffer.concat(chunks, size);
        expected = 5 + head.readUInt32BE(1);
      }
      if (size === expected) take();
    });
    stream.once('end', take);
    const start = (message: Buffer) => {
      let cancels: (() => void)[] | null = null;
      const call: UnaryCall = {
        request: message,
        deadlineMs,
        metadata: forwardableHeaders(headers),
        onCancel: (cancel) => {
          if (cancels === null) {
            cancels = [];
            stream.once('close', () => {
              if (!stream.headersSent) for (const c of cancels!) c();
            });
          }
          cancels.push(cancel);
        },
      };
      let result: Promise<RawAnswer> | RawAnswer;
      try {
        result = handler(call);
      } catch (err) {
        return trailersOnly(stream, Status.INTERNAL, (err as Error).message);
      }
      if (result instanceof Promise)
        result.then(
          (a) => answer(stream, a),
          (err: Error) => trailersOnly(stream, Status.INTERNAL, err.message),
        );
      else answer(stream, result);
    };
  });

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
        const timer = setClampedTimeout(() => {
          for (const s of sessions) s.destroy();
          resolve();
        }, graceMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        // Graceful: GOAWAY to every client, then each session closes once its streams finish.
        for (const s of sessions) s.close();
      }),
  };
}
