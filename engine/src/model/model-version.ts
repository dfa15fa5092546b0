import type { Bundle } from '../bundle/bundle.js';
import type { ModelIO } from '../codec/model-io.js';
import type { ModelPolicy } from '../config/types.js';
import type { ModelSchedulingInfo } from '../scheduler/model-info.js';
import type { ModelHooks } from '../hooks/model-hooks.js';
import type { CompiledModel } from './compiled-model.js';

/** Where a version's weights come from: the bundle's safetensors file, in argument order. */
export interface WeightSource {
  /** The bundle's weights.safetensors, or null for a model without weights. */
  readonly path: string | null;
  readonly argumentOrder: readonly string[];
}

/** The weights of a build: the weight cache's key for them, their source and device bytes. */
export interface VersionWeights {
  readonly key: string;
  readonly source: WeightSource;
  readonly bytes: number;
}

/**
 * What one read-and-compile of a bundle produced: the executables and the weights they run with.
 * Shared by the versions derived from it (a rename, a policy change), and freed once the last of
 * them lets go (`free` removes the weights from the cache and disposes the executables).
 */
export class ModelBuild {
  #refs = 0;
  #freed = false;

  constructor(
    /** Null for a meta model: it has no executable of its own, only its run hook. */
    readonly compiled: CompiledModel | null,
    readonly weights: VersionWeights,
    readonly free: () => void,
    /** The bundle's hooks, loaded once per build (a rename keeps them). */
    readonly hooks: ModelHooks | null = null,
  ) {}

  retain(): void {
    this.#refs++;
  }

  release(): void {
    if (--this.#refs > 0 || this.#freed) return;
    this.#freed = true;
    this.free();
  }

  get freed(): boolean {
    return this.#freed;
  }
}

export interface ModelVersionParts {
  readonly name: string;
  /** Unique across the worker's life, increasing: the order versions were made in. */
  readonly generation: number;
  readonly bundle: Bundle;
  readonly build: ModelBuild;
  readonly io: ModelIO;
  readonly scheduling: ModelSchedulingInfo;
  readonly policy: ModelPolicy;
  /** The bundle directory's content signature when it was read (dynamic mode compares it). */
  readonly signature: string;
}

/**
 * One immutable version of a model. A request captures the slot's current version when it is
 * admitted, is decoded against its IO, and runs on its executables with its weights, whatever
 * swaps happen meanwhile. Holds count the requests and executions still using it: a version that
 * was replaced is freed once they reach zero.
 */
export class ModelVersion {
  readonly name: string;
  readonly generation: number;
  readonly bundle: Bundle;
  readonly build: ModelBuild;
  readonly io: ModelIO;
  readonly scheduling: ModelSchedulingInfo;
  readonly policy: ModelPolicy;
  readonly signature: string;
  #holds = 0;
  #retired: (() => void) | null = null;
  #released = false;

  constructor(p: ModelVersionParts) {
    this.name = p.name;
    this.generation = p.generation;
    this.bundle = p.bundle;
    this.build = p.build;
    this.io = p.io;
    this.scheduling = p.scheduling;
    this.policy = p.policy;
    this.signature = p.signature;
    p.build.retain();
  }

  /** The executables; a meta version has none and is never scheduled, so never asks. */
  get compiled(): CompiledModel {
    const c = this.build.compiled;
    if (c === null) throw new Error(`${this.name} is a meta model: it has no executable`);
    return c;
  }

  get hooks(): ModelHooks | null {
    return this.build.hooks;
  }

  get isMeta(): boolean {
    return this.build.compiled === null;
  }

  get weights(): VersionWeights {
    return this.build.weights;
  }

  /** Compiled batch sizes, ascending. */
  get batchSizes(): readonly number[] {
    return this.build.compiled?.batchSizes ?? [];
  }

  /** Requests and executions using this version now. */
  get holds(): number {
    return this.#holds;
  }

  hold(): void {
    this.#holds++;
  }

  release(): void {
    if (--this.#holds === 0 && this.#retired !== null) this.#free();
  }

  /**
   * No new request will capture this version: its build is released once the last hold ends
   * (at once when none is held). Resolves when that has happened.
   */
  retire(): Promise<void> {
    if (this.#released) return Promise.resolve();
    return new Promise((resolve) => {
      const prev = this.#retired;
      this.#retired = () => {
        prev?.();
        resolve();
      };
      if (this.#holds === 0) this.#free();
    });
  }

  #free(): void {
    if (this.#released) return;
    this.#released = true;
    this.build.release();
    const done = this.#retired;
    this.#retired = null;
    done?.();
  }

  /** The same build under another name or policy (a rename, a policy change): nothing recompiles. */
  derive(
    changes: Partial<Pick<ModelVersionParts, 'name' | 'io' | 'scheduling' | 'policy'>>,
    generation: number,
  ): ModelVersion {
    return new ModelVersion({
      name: changes.name ?? this.name,
      generation,
      bundle: this.bundle,
      build: this.build,
      io: changes.io ?? this.io,
      scheduling: changes.scheduling ?? { ...this.scheduling, name: changes.name ?? this.name },
      policy: changes.policy ?? this.policy,
      signature: this.signature,
    });
  }
}
