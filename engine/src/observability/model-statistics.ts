import type { Duration, ModelStatisticsJson } from '../transports/service.js';
import { LatencyHistogram } from './latency-histogram.js';

class Acc {
  count = 0;
  ns = 0;
  add(seconds: number): void {
    this.count++;
    this.ns += Math.round(seconds * 1e9);
  }
  json(): Duration {
    return { count: this.count, ns: this.ns };
  }
}

/** Triton's per-model statistics (what perf_analyzer prints as the server-side breakdown). */
export class ModelStatistics {
  #lastInference = 0;
  #inferenceCount = 0;
  #executionCount = 0;
  readonly #success = new Acc();
  readonly #fail = new Acc();
  readonly #queue = new Acc();
  readonly #input = new Acc();
  readonly #infer = new Acc();
  readonly #output = new Acc();
  readonly #batches = new Map<number, { input: Acc; infer: Acc; output: Acc }>();
  /** Successful requests' total time, for the control API's p50 / p99 history. */
  readonly latency = new LatencyHistogram();

  /** `s.at`: when the request was answered, epoch milliseconds (the caller has just read its clock). */
  success(
    rows: number,
    s: { at: number; total: number; queue: number; input: number; infer: number; output: number },
  ): void {
    this.#lastInference = Math.floor(s.at);
    this.#inferenceCount += rows;
    this.#success.add(s.total);
    this.latency.add(s.total);
    this.#queue.add(s.queue);
    this.#input.add(s.input);
    this.#infer.add(s.infer);
    this.#output.add(s.output);
  }

  failure(totalSeconds: number): void {
    this.#fail.add(totalSeconds);
  }

  execution(batchSize: number, computeSeconds: number): void {
    this.#executionCount++;
    let b = this.#batches.get(batchSize);
    if (!b) this.#batches.set(batchSize, (b = { input: new Acc(), infer: new Acc(), output: new Acc() }));
    b.infer.add(computeSeconds);
  }

  json(name: string, version: string, weightBytes: number, resident: boolean): ModelStatisticsJson {
    return {
      name,
      version,
      last_inference: this.#lastInference,
      inference_count: this.#inferenceCount,
      execution_count: this.#executionCount,
      inference_stats: {
        success: this.#success.json(),
        fail: this.#fail.json(),
        queue: this.#queue.json(),
        compute_input: this.#input.json(),
        compute_infer: this.#infer.json(),
        compute_output: this.#output.json(),
      },
      batch_stats: [...this.#batches]
        .sort((a, b) => a[0] - b[0])
        .map(([batch_size, b]) => ({
          batch_size,
          compute_input: b.input.json(),
          compute_infer: b.infer.json(),
          compute_output: b.output.json(),
        })),
      memory_usage: [{ type: resident ? 'GPU' : 'CPU', id: 0, byte_size: weightBytes }],
    };
  }
}
