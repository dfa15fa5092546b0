/**
 * gRPC services, as their generated definitions describe them (each method's path, whether it
 * streams, its request decoder and answer encoder), turned into the frame server's raw method
 * table. One way for every service on a port to meet bytes that do not decode: the client's fault,
 * INVALID_ARGUMENT, per call for unary methods and per message on streams (the stream lives on).
 * A handler's ServeError becomes its gRPC status through the catalogue (toGrpcStatus).
 */
import { invalidArgument, type ServeError, toGrpcStatus } from '../errors.js';
import type { GrpcHeaders, RawAnswer } from './grpc-wire.js';
import type { MethodHandler, StreamCall } from './frame-server.js';

/** What a generated definition says of one method (grpc-js's MethodDefinition, in the part read here). */
export interface MethodDefinition {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  readonly requestDeserialize: (bytes: Buffer) => unknown;
  readonly responseSerialize: (value: never) => Buffer;
}

export type ServiceDefinition = Readonly<Record<string, MethodDefinition>>;

export interface CallContext {
  /** The client's own metadata (transport headers left out). */
  readonly metadata: GrpcHeaders;
  /** Epoch ms (Date.now's clock) of the client's deadline, or null. */
  readonly deadlineMs: number | null;
  /** Registers `cancel` to run if the call ends before its answer (reset, connection gone, deadline). */
  onCancel(cancel: () => void): void;
}

/** A request that did not decode, handed to a stream's handler in its place. */
export class MalformedMessage {
  constructor(readonly error: ServeError) {}
}

export function malformed(what: string, err: unknown): ServeError {
  return invalidArgument(`request is not a valid ${what}: ${(err as Error)?.message ?? String(err)}`);
}

export function wellFormed<T>(req: T | MalformedMessage): T {
  if (req instanceof MalformedMessage) throw req.error;
  return req;
}

/** A unary method: the decoded request in, the answer out (or a thrown error, as its status). */
export type UnaryMethod<Req = never, Res = unknown> = (request: Req, call: CallContext) => Res | Promise<Res>;

export interface MessageStream<Req = never, Res = unknown> extends CallContext {
  /** Set by the handler: each request, or a MalformedMessage for bytes that did not decode. */
  onMessage: (request: Req | MalformedMessage) => void;
  /** Set by the handler: the client has sent its last message (the default ends the call OK). */
  onEnd: () => void;
  write(answer: Res): void;
  /** Ends the call OK. */
  end(): void;
  /** Ends the call with the error's status. */
  fail(err: unknown): void;
  readonly ended: boolean;
}

/** A streaming method (client, server or both ways): set the stream's callbacks, write, end. */
export type StreamMethod<Req = never, Res = unknown> = (stream: MessageStream<Req, Res>) => void;

// Handlers are checked against their own request types where they are written; here they are
// stored by method name whatever those types are.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ServiceImplementation = Readonly<Record<string, UnaryMethod<any, any> | StreamMethod<any, any>>>;

const UNIMPLEMENTED = 12;

/** Every service of a port, by method path, for listenGrpcFrames. */
export class GrpcServices {
  readonly methods = new Map<string, MethodHandler>();

  constructor(private readonly serverName = 'hloserve') {}

  /** Adds a service; a method the implementation leaves out answers UNIMPLEMENTED. */
  addService(definition: ServiceDefinition, implementation: ServiceImplementation): void {
    for (const [name, def] of Object.entries(definition)) {
      const impl = implementation[name];
      const decode = def.requestDeserialize;
      const encode = def.responseSerialize as (value: unknown) => Buffer;
      if (impl === undefined) {
        const details = `${def.path} is not implemented by ${this.serverName}`;
        this.methods.set(def.path, () => ({ ok: false, code: UNIMPLEMENTED, details }));
      } else if (!def.requestStream && !def.responseStream) {
        this.methods.set(def.path, unaryHandler(name, decode, encode, impl as UnaryMethod<unknown>));
      } else {
        this.methods.set(def.path, { stream: streamHandler(name, decode, encode, impl as StreamMethod<unknown>) });
      }
    }
  }
}

function statusAnswer(err: unknown): RawAnswer {
  const s = toGrpcStatus(err);
  return { ok: false, code: s.code, details: s.details };
}

function unaryHandler(
  name: string,
  decode: (b: Buffer) => unknown,
  encode: (v: unknown) => Buffer,
  impl: UnaryMethod<unknown>,
): MethodHandler {
  const done = (res: unknown): RawAnswer => ({ ok: true, body: encode(res) });
  return (call) => {
    let req: unknown;
    try {
      req = decode(call.request);
    } catch (err) {
      return statusAnswer(malformed(`${name} request`, err));
    }
    let res: unknown;
    try {
      res = impl(req, call);
    } catch (err) {
      return statusAnswer(err);
    }
    if (res instanceof Promise) return res.then(done, statusAnswer);
    try {
      return done(res);
    } catch (err) {
      return statusAnswer(err);
    }
  };
}

function streamHandler(
  name: string,
  decode: (b: Buffer) => unknown,
  encode: (v: unknown) => Buffer,
  impl: StreamMethod<unknown>,
): (call: StreamCall) => void {
  return (call) => {
    const stream: MessageStream<unknown> = {
      metadata: call.metadata,
      deadlineMs: call.deadlineMs,
      onCancel: (c) => call.onCancel(c),
      onMessage: () => {},
      onEnd: () => call.finish(0),
      write: (answer) => call.write(encode(answer)),
      end: () => call.finish(0),
      fail: (err) => {
        const s = toGrpcStatus(err);
        call.finish(s.code, s.details);
      },
      get ended() {
        return call.ended;
      },
    };
    call.onMessage = (bytes) => {
      let req: unknown;
      try {
        req = decode(bytes);
      } catch (err) {
        req = new MalformedMessage(malformed(`${name} request`, err));
      }
      stream.onMessage(req);
    };
    call.onEnd = () => stream.onEnd();
    impl(stream);
  };
}
