/**
 * A handle on one model: its metadata and config (fetched once, then cached), readiness, and
 * inference with typed-array tensors in and out. Inputs and outputs can travel inline, through
 * regions the caller registered, or (`sharedMemory: true`) through the client's own pooled
 * regions, which suits large tensors on the same host.
 */
import type { ModelConfig } from '@hloserve/proto/inference';
import { ClientError, Status } from './client-error.js';
import type { Attempt, CallOptions } from './deadline.js';
import { elementSize, isDatatype, type Datatype } from './datatypes.js';
import { SystemSharedMemoryRegion } from './shared-memory.js';
import { alignUp, type StagingLease } from './staging.js';
import { checkTensor, elementCount, tensorBytes, tensorFromBytes, type OutputTensor, type Tensor } from './tensor.js';
import type {
  ModelMetadata,
  ParamValue,
  RegionRef,
  Transport,
  WireInputTensor,
  WireRequestedOutput,
  WireResponse,
} from './transport.js';

/** A place in a system shared-memory region. A region given by name only cannot be read back. */
export interface SharedMemoryPlace {
  readonly region: SystemSharedMemoryRegion | string;
  /** Default 0. */
  readonly offset?: number;
  /** Default: the tensor's size (inputs), the rest of the region (outputs). */
  readonly byteSize?: number;
}

/** An input already written into a registered region. */
export interface SharedMemoryInput {
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly sharedMemory: SharedMemoryPlace;
}

export type InferInput = Tensor | SharedMemoryInput;

export interface RequestedOutput {
  readonly name: string;
  /** The server writes the output here; the client reads it back (the region must be an object). */
  readonly sharedMemory?: SharedMemoryPlace;
}

export interface InferOptions extends CallOptions {
  /** Outputs to return (names or placements); default: all of them, inline. */
  outputs?: readonly (string | RequestedOutput)[];
  /** Request id, echoed by the server. */
  id?: string;
  /** Request parameters (e.g. `priority`). */
  parameters?: Record<string, ParamValue>;
  /**
   * Send every inline input, and receive every output whose size the metadata fixes, through the
   * client's pooled shared-memory regions instead of the message (same host only). `'auto'` does
   * the same where the server can open the client's regions, and goes inline where it cannot (the
   * server is on another host, or refuses shared memory): a refused registration sends this call
   * inline and keeps the client inline for `sharedMemoryRetryMs`, then it tries again.
   */
  sharedMemory?: boolean | 'auto';
}

export interface InferResult {
  readonly model: string;
  readonly version: string;
  readonly id: string;
  readonly outputs: readonly OutputTensor[];
  /** The named output; throws when the response has none by that name. */
  output(name: string): OutputTensor;
}

/** What a handle needs from its client. */
export interface ModelHost {
  readonly transport: Transport;
  run<T>(what: string, opts: CallOptions, fn: (a: Attempt) => Promise<T>): Promise<T>;
  stage(bytes: number): Promise<StagingLease>;
  register(region: SystemSharedMemoryRegion): Promise<void>;
  /** `sharedMemory: 'auto'`: whether to try shared memory now, and what to do when it was refused. */
  readonly autoSharedMemory: { usable(): boolean; refused(): void };
}

interface ReadBack {
  readonly region: SystemSharedMemoryRegion;
  readonly offset: number;
  readonly byteSize: number;
}

const regionName = (r: SystemSharedMemoryRegion | string): string => (typeof r === 'string' ? r : r.name);

function placeRef(what: string, place: SharedMemoryPlace, defaultSize: number | null): RegionRef {
  const offset = place.offset ?? 0;
  const byteSize =
    place.byteSize ?? defaultSize ?? (typeof place.region === 'string' ? null : place.region.byteSize - offset);
  if (byteSize === null) throw new TypeError(`${what}: give sharedMemory.byteSize`);
  return { region: regionName(place.region), offset, byteSize };
}

/**
 * What a server answers when it cannot use the client's region: it cannot open the key (another
 * host or IPC namespace: INVALID_ARGUMENT), or shared memory is off (UNIMPLEMENTED).
 */
const isRefusal = (err: unknown): boolean =>
  err instanceof ClientError && (err.code === Status.INVALID_ARGUMENT || err.code === Status.UNIMPLEMENTED);

const isShmInput = (x: InferInput): x is SharedMemoryInput => 'sharedMemory' in x && x.sharedMemory !== undefined;

/** The byte size of a metadata tensor for `rows` rows, or null when it is not fixed. */
function fixedBytes(datatype: string, shape: readonly number[], rows: number | null): number | null {
  if (!isDatatype(datatype)) return null;
  const size = elementSize(datatype);
  if (size === null) return null;
  const dims = shape.map((d, i) => (d === -1 && i === 0 && rows !== null ? rows : d));
  if (dims.some((d) => d < 0)) return null;
  return elementCount(dims) * size;
}

export class ModelHandle {
  readonly name: string;
  readonly version: string;
  readonly #host: ModelHost;
  #metadata: Promise<ModelMetadata> | null = null;
  #config: Promise<ModelConfig> | null = null;

  constructor(host: ModelHost, name: string, version = '') {
    this.#host = host;
    this.name = name;
    this.version = version;
  }

  /** ModelMetadata: inputs and outputs with datatypes and shapes (-1 = any). Cached after the first success. */
  metadata(opts: CallOptions = {}): Promise<ModelMetadata> {
    if (this.#metadata === null) {
      const p = this.#host.run('model metadata', opts, (a) =>
        this.#host.transport.modelMetadata(a, this.name, this.version),
      );
      this.#metadata = p;
      p.catch(() => {
        if (this.#metadata === p) this.#metadata = null;
      });
    }
    return this.#metadata;
  }

  /** ModelConfig (max_batch_size, inputs, outputs, dynamic batching). Cached after the first success. */
  config(opts: CallOptions = {}): Promise<ModelConfig> {
    if (this.#config === null) {
      const p = this.#host.run('model config', opts, (a) =>
        this.#host.transport.modelConfig(a, this.name, this.version),
      );
      this.#config = p;
      p.catch(() => {
        if (this.#config === p) this.#config = null;
      });
    }
    return this.#config;
  }

  /** Whether the model is loaded and serving; false (not an error) for an unknown model. */
  ready(opts: CallOptions = {}): Promise<boolean> {
    return this.#host.run('model ready', { ...opts, retry: false }, (a) =>
      this.#host.transport.modelReady(a, this.name, this.version),
    );
  }

  /** Forgets the cached metadata and config (after the model was reloaded with a new signature). */
  refresh(): void {
    this.#metadata = null;
    this.#config = null;
  }

  async infer(inputs: Readonly<Record<string, InferInput>>, opts: InferOptions = {}): Promise<InferResult> {
    const wireInputs: WireInputTensor[] = [];
    const inline: { name: string; t: Tensor; bytes: Uint8Array }[] = [];
    for (const [name, x] of Object.entries(inputs)) {
      if (isShmInput(x)) {
        const size = elementSize(x.datatype);
        const ref = placeRef(`input '${name}'`, x.sharedMemory, size === null ? null : elementCount(x.shape) * size);
        wireInputs.push({ name, datatype: x.datatype, shape: x.shape, sharedMemory: ref });
      } else {
        checkTensor(name, x);
        inline.push({ name, t: x, bytes: tensorBytes(x) });
      }
    }
    const requested: WireRequestedOutput[] = [];
    const readBacks = new Map<string, ReadBack>();
    for (const o of opts.outputs ?? []) {
      const out = typeof o === 'string' ? { name: o } : o;
      if (out.sharedMemory === undefined) {
        requested.push({ name: out.name });
        continue;
      }
      const region = out.sharedMemory.region;
      if (typeof region === 'string') {
        throw new TypeError(
          `output '${out.name}': pass the SystemSharedMemoryRegion itself so the output can be read back`,
        );
      }
      const ref = placeRef(`output '${out.name}'`, out.sharedMemory, null);
      requested.push({ name: out.name, sharedMemory: ref });
      readBacks.set(out.name, { region, offset: ref.offset, byteSize: ref.byteSize });
    }

    let lease: StagingLease | null = null;
    try {
      const auto = opts.sharedMemory === 'auto';
      if (opts.sharedMemory === true || (auto && this.#host.autoSharedMemory.usable())) {
        try {
          lease = await this.#stage(inline, requested, readBacks, wireInputs, opts);
        } catch (err) {
          if (!auto || !isRefusal(err)) throw err;
          this.#host.autoSharedMemory.refused();
        }
      }
      if (lease === null) {
        for (const i of inline)
          wireInputs.push({ name: i.name, datatype: i.t.datatype, shape: i.t.shape, bytes: i.bytes });
      }
      // Keep the caller's input order on the wire (it is the order the server reports errors in).
      const order = Object.keys(inputs);
      wireInputs.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
      const req = {
        model: this.name,
        version: this.version,
        id: opts.id ?? '',
        parameters: opts.parameters ?? {},
        inputs: wireInputs,
        outputs: requested,
      };
      const staged = lease?.region;
      const res = await this.#host.run('infer', opts, async (a) => {
        try {
          return await this.#host.transport.infer(a, req);
        } catch (raw) {
          const err = this.#host.transport.toError(raw);
          // The server forgot the pooled region (it restarted): register it again and resend once.
          if (staged === undefined || err.code !== Status.FAILED_PRECONDITION) throw err;
          await this.#host.register(staged);
          return this.#host.transport.infer(a, req);
        }
      });
      return await this.#result(res, readBacks);
    } finally {
      lease?.release();
    }
  }

  /** Lays inputs and sized outputs out in one leased region and writes the inputs into it. */
  async #stage(
    inline: readonly { name: string; t: Tensor; bytes: Uint8Array }[],
    requested: WireRequestedOutput[],
    readBacks: Map<string, ReadBack>,
    wireInputs: WireInputTensor[],
    opts: CallOptions,
  ): Promise<StagingLease> {
    const md = await this.metadata(opts);
    const rows = inline[0]?.t.shape[0] ?? null;
    let at = 0;
    const inPlaces = inline.map((i) => {
      const offset = at;
      at = alignUp(at + i.bytes.byteLength);
      return offset;
    });
    // With no outputs named, every output is returned; stage each whose size is fixed.
    const wanted =
      requested.length === 0 ? md.outputs.map((o) => ({ name: o.name }) as WireRequestedOutput) : requested;
    const outPlaces: { name: string; offset: number; size: number }[] = [];
    for (const o of wanted) {
      if (o.sharedMemory !== undefined) continue;
      const m = md.outputs.find((x) => x.name === o.name);
      const size = m === undefined ? null : fixedBytes(m.datatype, m.shape, rows);
      if (size === null || size === 0) continue;
      outPlaces.push({ name: o.name, offset: at, size });
      at = alignUp(at + size);
    }
    const lease = await this.#host.stage(Math.max(at, 1));
    try {
      const region = lease.region;
      await Promise.all(inline.map((i, k) => region.write(inPlaces[k]!, i.bytes)));
      inline.forEach((i, k) =>
        wireInputs.push({
          name: i.name,
          datatype: i.t.datatype,
          shape: i.t.shape,
          sharedMemory: { region: region.name, offset: inPlaces[k]!, byteSize: i.bytes.byteLength },
        }),
      );
      const staged = new Map(outPlaces.map((p) => [p.name, p]));
      const outs = wanted.map((o) => {
        const p = staged.get(o.name);
        if (p === undefined) return o;
        readBacks.set(o.name, { region, offset: p.offset, byteSize: p.size });
        return { name: o.name, sharedMemory: { region: region.name, offset: p.offset, byteSize: p.size } };
      });
      requested.splice(0, requested.length, ...outs);
      return lease;
    } catch (err) {
      lease.release();
      throw err;
    }
  }

  async #result(res: WireResponse, readBacks: ReadonlyMap<string, ReadBack>): Promise<InferResult> {
    const outputs = await Promise.all(
      res.outputs.map(async (o): Promise<OutputTensor> => {
        if (!isDatatype(o.datatype)) {
          throw new ClientError(Status.INTERNAL, `output '${o.name}' has unknown datatype ${o.datatype}`);
        }
        let bytes = o.bytes;
        if (bytes === null) {
          const rb = readBacks.get(o.name);
          if (rb === undefined) {
            throw new ClientError(Status.INTERNAL, `output '${o.name}' went to shared memory the client did not give`);
          }
          const size = elementSize(o.datatype);
          bytes = await rb.region.read(rb.offset, size === null ? rb.byteSize : elementCount(o.shape) * size);
        }
        return { name: o.name, ...tensorFromBytes(o.datatype, o.shape, bytes) };
      }),
    );
    return {
      model: res.model,
      version: res.version,
      id: res.id,
      outputs,
      output(name: string): OutputTensor {
        const t = outputs.find((x) => x.name === name);
        if (t === undefined) throw new Error(`no output '${name}' (have: ${outputs.map((x) => x.name).join(', ')})`);
        return t;
      },
    };
  }
}
