/**
 * ModelStreamInfer through the gateway. Each request message on the client's stream is routed on
 * its own, exactly as a unary ModelInfer (its model's holders, the router's choice, failover only
 * where it cannot have run), so one stream may address several models and its messages spread over
 * the replicas. A worker's answer bytes are wrapped into ModelStreamInferResponse.infer_response
 * without being decoded; a refusal becomes that message's error_message, as a worker's own stream
 * answers it, and the stream goes on.
 */
import { status as Status } from '@grpc/grpc-js';
import { ModelStreamInferResponse, streamInferResponseAround } from '@hloserve/proto';
import type { StreamCall, StreamHandler } from '@hloserve/common/h2/frame-server';
import type { Gateway } from './gateway.js';
import type { RawAnswer } from './worker-client.js';

/** One answer message on the client's stream, from one forwarded ModelInfer's answer. */
export function streamAnswer(a: RawAnswer): Buffer {
  if (a.ok) {
    return streamInferResponseAround(a.body ?? Buffer.alloc(0));
  }
  return Buffer.from(
    ModelStreamInferResponse.encode({ errorMessage: a.details ?? 'failed', inferResponse: undefined }).finish(),
  );
}

export function streamInferHandler(gw: Gateway): { readonly stream: StreamHandler } {
  return {
    stream: (call: StreamCall) => {
      let pending = 0;
      let clientDone = false;
      // The cancels of the forwards still in flight: the client resetting the stream (or its
      // deadline passing) cuts them, as it cuts a unary call.
      const cancels = new Set<() => void>();
      call.onCancel(() => {
        for (const c of cancels) c();
        cancels.clear();
      });
      const settleIfDone = () => {
        if (clientDone && pending === 0 && !call.ended) call.finish(Status.OK);
      };
      call.onMessage = (body) => {
        pending++;
        const mine: (() => void)[] = [];
        const answer = (a: RawAnswer) => {
          for (const c of mine) cancels.delete(c);
          pending--;
          if (!call.ended) call.write(streamAnswer(a));
          settleIfDone();
        };
        gw.infer({
          body,
          deadlineMs: call.deadlineMs,
          metadata: call.metadata,
          onCancel: (c) => {
            mine.push(c);
            cancels.add(c);
          },
        }).then(answer, (err: unknown) =>
          answer({
            ok: false,
            code: Status.INTERNAL,
            details: `the gateway failed to forward: ${(err as Error).message}`,
          }),
        );
      };
      call.onEnd = () => {
        clientDone = true;
        settleIfDone();
      };
    },
  };
}
