/**
 * One way for every gRPC service on the port (inference, health, control) to meet bytes that do
 * not decode: the client's fault, INVALID_ARGUMENT, never grpc-js's INTERNAL. 64-bit fields decode
 * without loss where the proto marks them jstype = JS_STRING; any other int64 past 2^53 throws in
 * the decoder (forceLong=number) and is answered here like any other malformed message.
 */
import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import { invalidArgument, type ServeError, toGrpcStatus } from '@hloserve/common/errors';

/**
 * What a request deserializer yields for bytes that are not the message it expects. grpc-js
 * answers a throwing deserializer with INTERNAL and tears a stream down; bad bytes are the client's
 * fault, so every method's deserializer is wrapped (tolerant()) and the handlers answer this with
 * INVALID_ARGUMENT: per call for unary methods, per message on streams.
 */
export class MalformedMessage {
  constructor(readonly error: ServeError) {}
}

export function malformed(what: string, err: unknown): ServeError {
  return invalidArgument(`request is not a valid ${what}: ${(err as Error)?.message ?? String(err)}`);
}

interface Deserializing {
  readonly requestDeserialize: (b: Buffer) => unknown;
  readonly path?: string;
}

export function tolerant<D extends object>(definition: D): D {
  const out: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(definition) as [string, Deserializing][]) {
    const decode = m.requestDeserialize;
    out[name] = {
      ...m,
      requestDeserialize: (b: Buffer) => {
        try {
          return decode(b);
        } catch (err) {
          return new MalformedMessage(malformed(`${name} request`, err));
        }
      },
    };
  }
  return out as D;
}

export function wellFormed<T>(req: T | MalformedMessage): T {
  if (req instanceof MalformedMessage) throw req.error;
  return req;
}

/** Runs a handler body and answers with its value or with the ServeError's gRPC status. */
export function unary<Req, Res>(fn: (req: Req, call: ServerUnaryCall<Req, Res>) => Res | Promise<Res>) {
  return (call: ServerUnaryCall<Req, Res>, cb: sendUnaryData<Res>) => {
    Promise.resolve()
      .then(() => fn(wellFormed<Req>(call.request), call))
      .then(
        (res) => cb(null, res),
        (err: unknown) => cb(toGrpcStatus(err)),
      );
  };
}
