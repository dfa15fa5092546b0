/**
 * The hooks of one model version: which steps its module provides, and each step run in the hook
 * pool with its inputs converted and its outputs checked against the manifest. Nothing a hook
 * returns reaches a batch or a client unchecked.
 */
import { ServeError } from '@hloserve/common/errors';
import type { Bundle } from '../bundle/bundle.js';
import type { TensorSpec } from '../bundle/tensor-spec.js';
import type { HostTensor } from '../tensor.js';
import type { HookPool } from './hook-pool.js';
import type { HookContextData } from './hook-protocol.js';
import { prepareHookSource, type HookSource } from './hook-source.js';
import { checkHookTensors, toHostTensor, type HookTensors } from './hook-tensor.js';

export interface HookLimits {
  /** Per hook call, milliseconds. */
  readonly timeoutMs: number;
}

export type SubCall = (model: string, tensors: HookTensors) => Promise<HookTensors>;

export class ModelHooks {
  readonly source: HookSource;
  readonly hasPreprocess: boolean;
  readonly hasPostprocess: boolean;
  readonly hasRun: boolean;
  readonly #pool: HookPool;
  readonly #limits: HookLimits;
  readonly #executableInputs: readonly TensorSpec[];
  readonly #clientOutputs: readonly TensorSpec[];
  /** What checkHookTensors checks each result against, made once rather than per call. */
  readonly #executableInputChecks: readonly TensorCheck[];
  readonly #clientOutputChecks: readonly TensorCheck[];

  private constructor(
    bundle: Bundle,
    source: HookSource,
    functions: readonly string[],
    pool: HookPool,
    limits: HookLimits,
  ) {
    this.source = source;
    this.hasPreprocess = functions.includes('preprocess');
    this.hasPostprocess = functions.includes('postprocess');
    this.hasRun = functions.includes('run');
    this.#pool = pool;
    this.#limits = limits;
    this.#executableInputs = bundle.manifest.executableInputs;
    this.#clientOutputs = bundle.manifest.clientOutputs ?? bundle.manifest.executableOutputs;
    this.#executableInputChecks = checksOf(this.#executableInputs);
    this.#clientOutputChecks = checksOf(this.#clientOutputs);
  }

  /**
   * Loads the bundle's hooks module once (an import error is the bundle's) and checks that it has
   * the steps its kind needs. Null when the bundle has no hooks. The check runs in `checkPool`
   * (default: the pool that runs the hooks): a meta model's is checked in the hooks pool, so a
   * start whose hooked models all load on that pool's one thread starts no thread for the meta
   * models' pool, which starts its own on its first call (or HookPool.prestart) and imports the
   * module then.
   */
  static async load(
    bundle: Bundle,
    pool: HookPool,
    cacheDir: string,
    limits: HookLimits,
    checkPool: HookPool = pool,
  ): Promise<ModelHooks | null> {
    if (!bundle.hooks) return null;
    const source = await prepareHookSource(bundle.hooks, cacheDir);
    const context: HookContextData = { model: bundle.name, requestId: 'load', parameters: {}, deadline: null };
    let functions: string[];
    try {
      // The pool gives a load its own, longer limit (LOAD_TIMEOUT_MS).
      functions = await checkPool.exportsOf(source.url, context, limits.timeoutMs);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw new ServeError('HLO_ERR_BUNDLE_INVALID', `${bundle.hooks.path}: the hooks module does not load: ${why}`);
    }
    const hooks = new ModelHooks(bundle, source, functions, pool, limits);
    if (bundle.kind === 'meta' && !hooks.hasRun)
      throw new ServeError('HLO_ERR_BUNDLE_INVALID', `${bundle.hooks.path}: kind: meta needs an exported run function`);
    if (bundle.kind === 'model' && !hooks.hasPreprocess && !hooks.hasPostprocess)
      throw new ServeError(
        'HLO_ERR_BUNDLE_INVALID',
        `${bundle.hooks.path}: exports neither preprocess nor postprocess (exports: ${functions.join(', ') || 'none'})`,
      );
    return hooks;
  }

  /**
   * Client tensors in, executable inputs out, in manifest order, their batch extents agreeing.
   * `gather`: other requests are in flight, and those read in the same event-loop turn may join
   * this call's hand-over to the hook thread (HookCall.gather).
   */
  async preprocess(inputs: readonly HostTensor[], context: HookContextData, gather = false): Promise<HostTensor[]> {
    const out = await this.#pool.run({
      url: this.source.url,
      fn: 'preprocess',
      tensors: inputs,
      context,
      timeoutMs: this.#limits.timeoutMs,
      gather,
    });
    const checked = checkHookTensors('preprocess result', out, this.#executableInputChecks);
    const tensors = this.#executableInputs.map((s) => toHostTensor(s.name, checked[s.name]!));
    sameBatch(this.#executableInputs, tensors);
    return tensors;
  }

  /** Executable outputs in, client outputs out. */
  async postprocess(outputs: readonly HostTensor[], context: HookContextData): Promise<HostTensor[]> {
    const out = await this.#pool.run({
      url: this.source.url,
      fn: 'postprocess',
      tensors: outputs,
      context,
      timeoutMs: this.#limits.timeoutMs,
    });
    const checked = checkHookTensors('postprocess result', out, this.#clientOutputChecks);
    return this.#clientOutputs.map((s) => toHostTensor(s.name, checked[s.name]!));
  }

  /** A meta model's pipeline: client tensors in, client outputs out, sub-models through `call`. */
  async run(inputs: readonly HostTensor[], context: HookContextData, call: SubCall): Promise<HostTensor[]> {
    const out = await this.#pool.run({
      url: this.source.url,
      fn: 'run',
      tensors: inputs,
      context,
      timeoutMs: this.#limits.timeoutMs,
      subcall: call,
    });
    const checked = checkHookTensors('run result', out, this.#clientOutputChecks);
    return this.#clientOutputs.map((s) => toHostTensor(s.name, checked[s.name]!));
  }
}

type TensorCheck = Parameters<typeof checkHookTensors>[2][number];

function checksOf(specs: readonly TensorSpec[]): TensorCheck[] {
  return specs.map((s) => ({ name: s.name, dtype: s.dtype, shape: s.fixedExtents }));
}

function sameBatch(specs: readonly TensorSpec[], tensors: readonly HostTensor[]): void {
  let rows: number | null = null;
  specs.forEach((s, i) => {
    if (s.wireBatchAxis === null) return;
    const n = tensors[i]!.shape[s.wireBatchAxis]!;
    if (rows !== null && n !== rows)
      throw new ServeError(
        'HLO_ERR_HOOK_FAILED',
        `preprocess result: tensor "${s.name}" has ${n} rows where an earlier input has ${rows}`,
      );
    rows = n;
  });
}
