/**
 * One HTTP/2 connection to a worker's gRPC port, spoken in frames on the socket (frame/): a unary
 * call is one stream id on a long-lived connection (HEADERS, the prefixed message, then the
 * answer's HEADERS, DATA and status trailers), one small state object per call and no node:http2
 * stream. No per-call timer on forwarded calls (the client's deadline travels as grpc-timeout and
 * the client's cancellation resets the stream), no re-encoding of the message.
 *
 * How a call failed decides whether it may be tried elsewhere (routing/status.ts), so the
 * details say which of three things happened: the connection was never made ("No connection
 * established"), the worker did not process the stream (REFUSED_STREAM, or a stream past its
 * GOAWAY's last id, or one never sent: "not processed"), or the connection broke while the
 * worker held it ("Connection dropped").
 */
import { connect as netConnect } from 'node:net';
import { status as Status } from '@grpc/grpc-js';
import { setClampedTimeout } from '@hloserve/common/timers';
import { grpcTimeoutHeader } from '../routing/deadline.js';
import {
  appendMetadata,
  decodeGrpcMessage,
  type GrpcHeaders,
  type RawAnswer,
  writeMessage,
} from '@hloserve/common/h2/grpc-wire';
import { ERR_CANCEL, ERR_REFUSED_STREAM } from '@hloserve/common/h2/frame/frame-codec';
import { H2Connection, type H2Stream } from '@hloserve/common/h2/frame/connection';
import { encodeHeaders, type HeaderList } from '@hloserve/common/h2/frame/hpack';

export type { RawAnswer };

/** Per-stream and per-connection receive windows: a large tensor should not wait for WINDOW_UPDATEs. */
const STREAM_WINDOW = 4 * 2 ** 20;
const SESSION_WINDOW = 64 * 2 ** 20;
const MAX_FRAME_SIZE = 1 << 20;
const MAX_HEADER_LIST_BYTES = 64 * 1024;

interface ConnState {
  readonly conn: H2Connection;
  connected: boolean;
  error: Error | null;
}

/** HTTP statuses a gRPC server or a proxy in between may answer with instead of a gRPC status. */
function httpToGrpc(status: number): number {
  if (status === 400) return Status.INTERNAL;
  if (status === 401) return Status.UNAUTHENTICATED;
  if (status === 403) return Status.PERMISSION_DENIED;
  if (status === 404) return Status.UNIMPLEMENTED;
  if (status === 429 || status === 502 || status === 503 || status === 504) return Status.UNAVAILABLE;
  return Status.UNKNOWN;
}

/** The fixed part of every request's header block after :path. */
const REQUEST_TAIL = encodeHeaders([
  'content-type',
  'application/grpc',
  'te',
  'trailers',
  'grpc-accept-encoding',
  'identity',
]);

export class WorkerChannel {
  private current: ConnState | null = null;

  private readonly host: string;
  private readonly port: number;
  /** `:method POST`, `:scheme http`, `:authority` encoded once. */
  private readonly requestHead: Buffer;
  /** `:path` blocks by method path (a handful of KServe methods). */
  private readonly paths = new Map<string, Buffer>();

  constructor(
    authority: string,
    private readonly maxMessageBytes: number,
  ) {
    const i = authority.lastIndexOf(':');
    this.host = authority.slice(0, i).replace(/^\[|\]$/g, '');
    this.port = Number(authority.slice(i + 1));
    this.requestHead = encodeHeaders([':method', 'POST', ':scheme', 'http', ':authority', authority]);
  }

  private connection(): ConnState {
    const c = this.current;
    if (c && c.conn.usable) return c;
    const socket = netConnect({ host: this.host, port: this.port, noDelay: true });
    // The gateway's listeners keep the process alive, not an idle connection to a worker.
    socket.unref();
    let st: ConnState | null = null;
    const conn = new H2Connection(
      socket,
      {
        role: 'client',
        streamWindow: STREAM_WINDOW,
        connectionWindow: Math.max(SESSION_WINDOW, 2 * (this.maxMessageBytes + 5)),
        maxFrameSize: MAX_FRAME_SIZE,
        maxHeaderListBytes: MAX_HEADER_LIST_BYTES,
      },
      {
        onGoaway: () => {
          if (this.current === st) this.current = null;
          // New calls go to a fresh connection; this one closes once its calls are answered.
          conn.onDrained = () => conn.end();
          if (conn.streams.size === 0) conn.end();
        },
        onClose: () => {
          if (this.current === st) this.current = null;
          // A connection that goes idle after GOAWAY is closed by the worker; nothing to do here.
        },
      },
    );
    st = { conn, connected: false, error: null };
    const state = st;
    socket.once('connect', () => (state.connected = true));
    socket.on('error', (err: Error) => (state.error ??= err));
    this.current = st;
    return st;
  }

  private pathBlock(path: string): Buffer {
    let b = this.paths.get(path);
    if (b === undefined) {
      b = encodeHeaders([':path', path]);
      if (this.paths.size < 64) this.paths.set(path, b);
    }
    return b;
  }

  /**
   * One unary call. `deadlineMs` (epoch ms) is sent as grpc-timeout; `localTimeout` adds a local
   * timer, for the gateway's own calls (health), which have no client to cancel them.
   */
  call(
    path: string,
    body: Buffer,
    deadlineMs: number | null,
    metadata: GrpcHeaders | undefined,
    onCancel: ((cancel: () => void) => void) | undefined,
    localTimeout: boolean,
  ): Promise<RawAnswer> {
    return new Promise<RawAnswer>((resolve) => {
      let st: ConnState;
      let s: H2Stream | null;
      try {
        st = this.connection();
        s = st.conn.openStream();
        if (s === null) {
          // Out of stream ids or GOAWAY just arrived: one fresh connection.
          this.current = null;
          st = this.connection();
          s = st.conn.openStream();
        }
      } catch (err) {
        resolve({
          ok: false,
          code: Status.UNAVAILABLE,
          details: `No connection established: ${(err as Error).message}`,
        });
        return;
      }
      if (s === null) {
        resolve({ ok: false, code: Status.UNAVAILABLE, details: 'stream not processed: no usable connection' });
        return;
      }
      const stream = s;
      const conn = st.conn;
      let settled = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let grpcStatus = -1;
      let grpcMessage = '';
      const chunks: Buffer[] = [];
      let size = 0;
      const settle = (a: RawAnswer) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        resolve(a);
      };
      const readStatus = (list: HeaderList) => {
        let http = 200;
        for (let i = 0; i < list.length; i += 2) {
          const k = list[i]!;
          if (k === 'grpc-status') grpcStatus = Number(list[i + 1]);
          else if (k === 'grpc-message') grpcMessage = decodeGrpcMessage(list[i + 1]);
          else if (k === ':status') http = Number(list[i + 1]);
        }
        if (http !== 200 && grpcStatus === -1) {
          grpcStatus = httpToGrpc(http);
          grpcMessage = `worker answered HTTP ${http}`;
        }
      };
      const conclude = () => {
        if (settled) return;
        if (grpcStatus === -1) {
          settle({
            ok: false,
            code: Status.UNAVAILABLE,
            details: this.brokenDetails(st, stream, 'stream ended without a status'),
          });
          return;
        }
        if (grpcStatus !== Status.OK) {
          settle({ ok: false, code: grpcStatus, details: grpcMessage });
          return;
        }
        const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        if (all.length < 5 || all[0] !== 0 || all.readUInt32BE(1) !== all.length - 5) {
          settle({ ok: false, code: Status.INTERNAL, details: 'the worker answered a malformed gRPC message' });
          return;
        }
        settle({ ok: true, body: all.subarray(5) });
      };
      // The status trailers come after every DATA frame: the answer is complete with them.
      stream.onHeaders = (list, end) => {
        readStatus(list);
        if (end) conclude();
      };
      stream.onData = (c, end) => {
        if (settled) return;
        size += c.length;
        if (size > this.maxMessageBytes + 5) {
          settle({
            ok: false,
            code: Status.RESOURCE_EXHAUSTED,
            details: `the worker's answer is larger than max (${size - 5} vs. ${this.maxMessageBytes})`,
          });
          conn.resetStream(stream, ERR_CANCEL, 'answer too large');
          return;
        }
        if (c.length > 0) chunks.push(c);
        if (end) conclude();
      };
      stream.onReset = (_code, why) => {
        if (settled) return;
        settle({ ok: false, code: Status.UNAVAILABLE, details: this.brokenDetails(st, stream, why) });
      };
      onCancel?.(() => {
        if (settled) return;
        settle({ ok: false, code: Status.CANCELLED, details: 'cancelled by the client' });
        conn.resetStream(stream, ERR_CANCEL, 'cancelled by the client');
      });
      if (localTimeout && deadlineMs !== null) {
        timer = setClampedTimeout(() => {
          settle({ ok: false, code: Status.DEADLINE_EXCEEDED, details: 'deadline exceeded waiting for the worker' });
          conn.resetStream(stream, ERR_CANCEL, 'deadline exceeded');
        }, deadlineMs - Date.now());
      }
      const parts: Buffer[] = [];
      if (conn.sizeUpdatePending) {
        conn.sizeUpdatePending = false;
        parts.push(Buffer.of(0x20));
      }
      parts.push(this.requestHead, this.pathBlock(path), REQUEST_TAIL);
      const extra: HeaderList = [];
      if (metadata !== undefined) appendMetadata(extra, metadata);
      if (deadlineMs !== null) extra.push('grpc-timeout', grpcTimeoutHeader(Math.max(1, deadlineMs - Date.now())));
      if (extra.length > 0) parts.push(encodeHeaders(extra));
      if (!conn.tryWriteUnary(stream, parts, body, null)) {
        conn.cork();
        conn.writeHeaders(stream, Buffer.concat(parts), false);
        writeMessage(conn, stream, body, null);
        conn.uncork();
      }
    });
  }

  /** Why a stream ended without a status; the words are what routing/status.ts classifies. */
  private brokenDetails(st: ConnState, s: H2Stream, why: string): string {
    const reason = st.error?.message ?? why;
    if (!st.connected) return `No connection established: ${reason}`;
    if (s.id > st.conn.peerLastStreamId || s.resetCode === ERR_REFUSED_STREAM)
      return `stream not processed by the worker (REFUSED_STREAM or past GOAWAY): ${reason}`;
    return `Connection dropped mid-call: ${reason}`;
  }

  close(): void {
    const c = this.current;
    this.current = null;
    if (!c) return;
    // Graceful: calls in flight finish, then the connection goes.
    if (c.conn.streams.size === 0) c.conn.end();
    else {
      c.conn.onDrained = () => c.conn.end();
      c.conn.goaway();
    }
  }
}
