/**
 * A stand-in device for scheduler tests. "Doubles" every f32 input into an output of the same
 * shape (so per-request slicing is checked on real bytes), and either finishes when the test says
 * so (manual) or immediately after advancing a ManualClock by a fixed cost (timed).
 */
import type { ExecutionLease, ExecutionRequest, Executor } from '../../src/scheduler/executor.js';
import type { ManualClock } from '../../src/scheduler/manual-clock.js';
import type { HostTensor } from '../../src/tensor.js';

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise continuation run (the scheduler's loop is microtask-driven). */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export function f32(name: string, shape: readonly number[], values: readonly number[]): HostTensor {
  const data = new Uint8Array(new Float32Array(values).buffer);
  return { name, dtype: 'f32', shape, data };
}

export function values(t: HostTensor): number[] {
  return [...new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength))];
}

export function doubled(inputs: readonly HostTensor[]): HostTensor[] {
  return inputs.map((t) =>
    f32(
      `${t.name}_out`,
      t.shape,
      values(t).map((v) => v * 2),
    ),
  );
}

export interface Call {
  readonly request: ExecutionRequest;
  readonly done: Deferred<readonly HostTensor[]>;
  /** Completes the call with doubled inputs. */
  finish(): void;
  fail(err: unknown): void;
}

export class FakeExecutor implements Executor {
  readonly calls: Call[] = [];
  readonly prepared: string[] = [];
  readonly released: string[] = [];
  /** Timed mode: milliseconds each execution takes, per model (the clock advances inside execute). */
  costMs: ((model: string, batchSize: number) => number) | null = null;
  prepareFailure: ((model: string) => unknown) | null = null;
  /** False: like PJRT, launched work cannot be stopped (the scheduler passes a dead signal). */
  cancellable = true;
  /** True: like PJRT, done with its inputs once an execution settles (the scheduler reuses batch buffers). */
  releasesInputs = false;

  constructor(readonly clock?: ManualClock) {}

  prepare(model: string): Promise<ExecutionLease> {
    this.prepared.push(model);
    const failure = this.prepareFailure?.(model);
    if (failure !== undefined && failure !== null) return Promise.reject(failure);
    return Promise.resolve({ release: () => void this.released.push(model) });
  }

  execute(request: ExecutionRequest): Promise<readonly HostTensor[]> {
    const done = deferred<readonly HostTensor[]>();
    const call: Call = {
      request,
      done,
      finish: () => done.resolve(doubled(request.inputs)),
      fail: (err) => done.reject(err),
    };
    this.calls.push(call);
    if (this.costMs !== null) {
      this.clock!.advance(this.costMs(request.model, request.batchSize));
      call.finish();
    }
    return done.promise;
  }

  /** Models of the executions so far, in order. */
  get order(): string[] {
    return this.calls.map((c) => c.request.model);
  }
}
