/**
 * One HTTP/2 connection to a worker's gRPC port, spoken directly with node:http2: a unary call is
 * one stream (headers, the prefixed message, read the answer and its status trailers). No gRPC
 * library call machinery, no per-call timer on forwarded calls (the client's deadline travels as
 * grpc-timeout and the client's cancellation resets the stream), no re-encoding.
 *
 * How a call failed decides whether it may be tried elsewhere (routing/status.ts), so the
 * details say which of three things happened: the connection was never made ("connect ..."), the
 * worker did not process the stream (REFUSED_STREAM, or a stream past its GOAWAY's last id, or one
 * never sent: "not processed"), or the connection broke while the worker held it ("Connection
 * dropped").
 */
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants,
  type IncomingHttpHeaders,
} from 'node:http2';
import { connect as netConnect } from 'node:net';
import { status as Status } from '@grpc/grpc-js';
import { setClampedTimeout } from '@hloserve/common/timers';
import { grpcTimeoutHeader } from '../routing/deadline.js';
import { decodeGrpcMessage, type GrpcHeaders, writeMessage } from './grpc-wire.js';

export interface RawAnswer {
  readonly ok: boolean;
  /** The answer's message, without its prefix. */
  readonly body?: Buffer;
  readonly code?: number;
  readonly details?: string;
}

/** Per-stream and per-connection flow-control windows: a large tensor should not wait for WINDOW_UPDATEs. */
const STREAM_WINDOW = 4 * 2 ** 20;
const SESSION_WINDOW = 64 * 2 ** 20;

interface SessionState {
  readonly session: ClientHttp2Session;
  connected: boolean;
  /** Streams above this id were not processed (from the worker's GOAWAY). */
  lastProcessedId: number;
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

const ignore = (): void => {};

export class WorkerChannel {
  private current: SessionState | null = null;

  private readonly host: string;
  private readonly port: number;

  constructor(
    private readonly authority: string,
    private readonly maxMessageBytes: number,
  ) {
    const i = authority.lastIndexOf(':');
    this.host = authority.slice(0, i).replace(/^\[|\]$/g, '');
    this.port = Number(authority.slice(i + 1));
  }

  private session(): SessionState {
    const c = this.current;
    if (c && !c.session.closed && !c.session.destroyed) return c;
    const session = connect(`http://${this.authority}`, {
      // Small frames go out at once (no Nagle wait behind an unacknowledged one).
      createConnection: () => netConnect({ host: this.host, port: this.port, noDelay: true }),
      settings: { initialWindowSize: STREAM_WINDOW, enablePush: false },
      // In megabytes: room for the largest message the gateway forwards, in both directions.
      maxSessionMemory: Math.max(64, Math.ceil((2 * this.maxMessageBytes) / 2 ** 20)),
    });
    const st: SessionState = { session, connected: false, lastProcessedId: Infinity, error: null };
    session.once('connect', () => {
      st.connected = true;
      session.setLocalWindowSize(SESSION_WINDOW);
    });
    session.on('goaway', (_code: number, lastStreamID: number) => {
      st.lastProcessedId = lastStreamID;
      if (this.current === st) this.current = null;
    });
    session.on('error', (err: Error) => {
      st.error = err;
      if (this.current === st) this.current = null;
    });
    session.once('close', () => {
      if (this.current === st) this.current = null;
    });
    // The gateway's listeners keep the process alive, not an idle connection to a worker.
    session.unref();
    this.current = st;
    return st;
  }

  /**
   * One unary call. `deadlineMs` (epoch ms) is sent as grpc-timeout; `timeoutMs` adds a local
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
      let st: SessionState;
      try {
        st = this.session();
      } catch (err) {
        resolve({ ok: false, code: Status.UNAVAILABLE, details: `connect failed: ${(err as Error).message}` });
        return;
      }
      // One shape for every call (pseudo-headers first, as node:http2 sends them), metadata after.
      const headers: GrpcHeaders = {
        ':method': 'POST',
        ':path': path,
        ':scheme': 'http',
        ':authority': this.authority,
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-accept-encoding': 'identity',
      };
      if (metadata !== undefined) for (const k in metadata) headers[k] = metadata[k];
      if (deadlineMs !== null) headers['grpc-timeout'] = grpcTimeoutHeader(Math.max(1, deadlineMs - Date.now()));
      let req: ClientHttp2Stream;
      try {
        req = st.session.request(headers);
      } catch (err) {
        resolve({ ok: false, code: Status.UNAVAILABLE, details: `stream not processed: ${(err as Error).message}` });
        return;
      }
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
      const readStatus = (h: IncomingHttpHeaders) => {
        const s = h['grpc-status'];
        if (s !== undefined) {
          grpcStatus = Number(s);
          grpcMessage = decodeGrpcMessage(h['grpc-message']);
        }
      };
      req.on('response', (h) => {
        const http = h[':status'] ?? 200;
        if (http !== 200 && h['grpc-status'] === undefined) {
          grpcStatus = httpToGrpc(http);
          grpcMessage = `worker answered HTTP ${http}`;
        } else readStatus(h);
      });
      // The status trailers come after every DATA frame: the answer is complete here, a few ticks
      // before the stream's 'close'.
      req.on('trailers', (h) => {
        readStatus(h);
        if (grpcStatus !== -1) conclude();
      });
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > this.maxMessageBytes + 5) {
          req.close(constants.NGHTTP2_CANCEL);
          settle({
            ok: false,
            code: Status.RESOURCE_EXHAUSTED,
            details: `the worker's answer is larger than max (${size - 5} vs. ${this.maxMessageBytes})`,
          });
          return;
        }
        chunks.push(c);
      });
      // 'close' always follows; the error itself is read from the stream's state there.
      req.on('error', ignore);
      const conclude = () => {
        if (settled) return;
        if (grpcStatus === -1) {
          settle({ ok: false, code: Status.UNAVAILABLE, details: this.brokenDetails(st, req) });
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
      req.once('close', conclude);
      onCancel?.(() => {
        if (settled) return;
        req.close(constants.NGHTTP2_CANCEL);
        settle({ ok: false, code: Status.CANCELLED, details: 'cancelled by the client' });
      });
      if (localTimeout && deadlineMs !== null) {
        timer = setClampedTimeout(() => {
          req.close(constants.NGHTTP2_CANCEL);
          settle({ ok: false, code: Status.DEADLINE_EXCEEDED, details: 'deadline exceeded waiting for the worker' });
        }, deadlineMs - Date.now());
      }
      writeMessage(req, body);
    });
  }

  /** Why a stream ended without a status; the words are what routing/status.ts classifies. */
  private brokenDetails(st: SessionState, req: ClientHttp2Stream): string {
    const why = st.error?.message ?? `stream reset (code ${req.rstCode ?? '?'})`;
    if (!st.connected) return `No connection established: ${why}`;
    if (req.id === undefined || req.id > st.lastProcessedId || req.rstCode === constants.NGHTTP2_REFUSED_STREAM)
      return `stream not processed by the worker (REFUSED_STREAM or past GOAWAY): ${why}`;
    return `Connection dropped mid-call: ${why}`;
  }

  close(): void {
    const c = this.current;
    this.current = null;
    c?.session.close();
  }
}
