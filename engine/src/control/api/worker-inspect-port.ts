/**
 * The InspectPort over the Worker: tensors from the serving version's manifest, histograms from
 * the worker's metrics and the scheduler, queues from the scheduler, versions from the folders the
 * upload installer keeps beside the repository (`.<name>.previous-<ms>`), and try-it through
 * Worker.infer, the same path a KServe client's request takes.
 */
import { createHash } from 'node:crypto';
import { readdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ServeError } from '@hloserve/common/errors';
import type { WireInput } from '@hloserve/common/wire';
import { readManifest, clientInputSpecs, clientOutputSpecs } from '../../bundle/manifest.js';
import { readSafetensors } from '../../bundle/safetensors.js';
import { readBundleFile } from '../../bundle/bundle-file.js';
import type { TensorSpec } from '../../bundle/tensor-spec.js';
import { toWireDatatype } from '../../dtypes.js';
import type { ModelVersion } from '../../model/model-version.js';
import type { Worker } from '../../worker/worker.js';
import type { ControlService } from '../control-service.js';
import type {
  BundleVersionView,
  InspectPort,
  ModelHistogramsView,
  ModelIoView,
  QueuesView,
  TensorView,
  TryResult,
  TryTensor,
} from './inspect-port.js';
import { generatedBytes, maxAbsDiff, readValues } from './tensor-values.js';

const PREVIEW = 64;
/** Requests larger than this many elements are not echoed as JSON for the curl snippet. */
const JSON_ELEMENTS = 4096;
const TRY_DEADLINE_MS = 60_000;

interface RawTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
}

interface Reference {
  readonly source: ModelIoView['reference'];
  readonly inputs: readonly RawTensor[];
  readonly outputs: readonly RawTensor[];
}

export class WorkerInspectPort implements InspectPort {
  readonly #w: Worker;
  readonly #control: ControlService;
  /** Models with a rollback running: one at a time per model. */
  readonly #rolling = new Set<string>();

  constructor(worker: Worker, control: ControlService) {
    this.#w = worker;
    this.#control = control;
  }

  #serving(name: string): ModelVersion {
    const slot = this.#w.registry.get(name);
    if (slot === undefined) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
    if (slot.current === null)
      throw new ServeError('HLO_ERR_MODEL_NOT_READY', `model '${name}' has no version serving (${slot.state})`);
    return slot.current;
  }

  async io(name: string): Promise<ModelIoView> {
    const v = this.#serving(name);
    const m = v.bundle.manifest;
    return {
      name,
      kind: m.kind,
      description: m.description,
      inputs: clientInputSpecs(m).map(tensorView),
      outputs: clientOutputSpecs(m).map(tensorView),
      executableInputs: m.executableInputs.map(tensorView),
      executableOutputs: m.executableOutputs.map(tensorView),
      hooks: v.bundle.hooks !== null,
      metaCalls: m.metaCalls,
      compiledBatchSizes: m.compiledBatchSizes,
      reference: await referenceSource(v),
      provenance: m.provenance,
      warnings: v.bundle.warnings,
    };
  }

  histograms(name: string): ModelHistogramsView {
    const slot = this.#w.registry.get(name);
    if (slot === undefined) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
    const s = this.#w.scheduler.stats(slot.queue);
    const lat = this.#w.metrics.latencyHistogram(name);
    return {
      latencySeconds: lat ?? null,
      batchSizes: Object.fromEntries(Object.entries(s?.batchSizeHistogram ?? {})),
      rowsServed: s?.rowsServed ?? 0,
      paddedRows: s?.paddedRows ?? 0,
    };
  }

  queues(): QueuesView {
    const sched = this.#w.scheduler;
    const all = sched.allStats();
    let weights = 0;
    let recent = 0;
    for (const s of all) {
      // fair entitles only the models with work queued, in proportion to their weights.
      if (s.queueDepth > 0) weights += s.weight;
      recent += s.recentComputeSeconds;
    }
    return {
      at: Date.now(),
      discipline: sched.discipline,
      executing: sched.executing,
      models: all.map((s) => ({
        name: s.model,
        weight: s.weight,
        depth: s.queueDepth,
        rows: s.queuedRows,
        inflight: s.inflightRequests,
        oldestWaitMs: Math.round(s.oldestWaitMs),
        deadlineMisses: s.dropped.expired + s.dropped.shed,
        requestsServed: s.requestsServed,
        computeSecondsTotal: s.computeSecondsTotal,
        recentComputeSeconds: s.recentComputeSeconds,
        contendedShare: recent > 0 ? s.recentComputeSeconds / recent : 0,
        weightShare: weights > 0 && s.queueDepth > 0 ? s.weight / weights : 0,
      })),
    };
  }

  async versions(name: string): Promise<BundleVersionView[]> {
    const repo = this.#w.modelRepo;
    const prefix = `.${name}.previous-`;
    const out: BundleVersionView[] = [];
    const current = await describeFolder(join(repo, name), 'current', null);
    if (current) out.push(current);
    let entries: string[] = [];
    try {
      entries = await readdir(repo);
    } catch {
      entries = [];
    }
    for (const e of entries) {
      if (!e.startsWith(prefix)) continue;
      const id = e.slice(prefix.length);
      if (!/^\d{1,16}$/.test(id)) continue;
      const v = await describeFolder(join(repo, e), id, Number(id));
      if (v) out.push(v);
    }
    if (out.length === 0 && this.#w.registry.get(name) === undefined)
      throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
    return out.sort((a, b) => (a.current ? -1 : b.current ? 1 : b.at - a.at));
  }

  async rollback(name: string, id: string, signal?: AbortSignal): Promise<BundleVersionView[]> {
    if (this.#control.mode === 'static')
      throw new ServeError(
        'HLO_ERR_FAILED_PRECONDITION',
        'static mode: the repository is read at start only, so a rollback would not be served',
      );
    if (!/^\d{1,16}$/.test(id))
      throw new ServeError('HLO_ERR_INVALID_ARGUMENT', `version: '${id.slice(0, 32)}' is not a kept version's id`);
    if (this.#rolling.has(name))
      throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `a rollback of '${name}' is already running`);
    const repo = this.#w.modelRepo;
    const kept = join(repo, `.${name}.previous-${id}`);
    if (!(await isDir(kept))) throw new ServeError('HLO_ERR_NOT_FOUND', `model '${name}' has no kept version ${id}`);
    this.#rolling.add(name);
    try {
      const target = join(repo, name);
      // The version being replaced is kept in turn, so a rollback can itself be rolled back.
      if (await isDir(target)) await rename(target, join(repo, `.${name}.previous-${Date.now()}`));
      await rename(kept, target);
      await this.#control.load(name, signal);
    } finally {
      this.#rolling.delete(name);
    }
    return this.versions(name);
  }

  async tryInfer(name: string, signal?: AbortSignal): Promise<TryResult> {
    const v = this.#serving(name);
    const ref = await this.#reference(v);
    const inputs: WireInput[] = ref.inputs.map((t) => ({
      name: t.name,
      datatype: t.datatype,
      shape: t.shape,
      parameters: {},
      data: { kind: 'raw', bytes: t.bytes },
    }));
    const t0 = performance.now();
    const res = await this.#w.infer(
      { modelName: name, modelVersion: '', id: 'console-try-it', parameters: {}, inputs, outputs: [] },
      { deadline: Date.now() + TRY_DEADLINE_MS, signal },
    );
    const latencyMs = performance.now() - t0;
    let diff: number | null = null;
    for (const want of ref.outputs) {
      const got = res.outputs.find((o) => o.name === want.name);
      if (!got?.data) continue;
      const d = maxAbsDiff(want.datatype, got.data, want.bytes);
      if (d !== null) diff = Math.max(diff ?? 0, d);
    }
    const preview = (t: { name: string; datatype: string; shape: readonly number[] }, bytes: Uint8Array | null) =>
      ({
        name: t.name,
        datatype: t.datatype,
        shape: t.shape,
        elements: t.shape.reduce((a, b) => a * b, 1),
        preview: bytes ? readValues(t.datatype, bytes, PREVIEW).map(finite) : [],
      }) satisfies TryTensor;
    return {
      model: name,
      source: ref.source,
      inputs: ref.inputs.map((t) => preview(t, t.bytes)),
      outputs: res.outputs.map((o) => preview(o, o.data)),
      latencyMs,
      maxAbsDiff: diff,
      requestJson: requestJson(ref.inputs),
    };
  }

  /** client-reference.json (hooks included), else reference.safetensors, else a generated input. */
  async #reference(v: ModelVersion): Promise<Reference> {
    const b = v.bundle;
    const m = b.manifest;
    const client = await readBundleFile(join(b.dir, 'client-reference.json'), 'utf8').catch(() => null);
    if (client !== null) {
      try {
        const parsed = JSON.parse(client) as { inputs?: unknown; outputs?: unknown };
        const tensors = (x: unknown): RawTensor[] =>
          (Array.isArray(x) ? x : []).map(
            (t: { name: string; datatype: string; shape: number[]; raw_b64: string }) => ({
              name: String(t.name),
              datatype: String(t.datatype),
              shape: (t.shape ?? []).map(Number),
              bytes: new Uint8Array(Buffer.from(String(t.raw_b64 ?? ''), 'base64')),
            }),
          );
        const inputs = tensors(parsed.inputs);
        if (inputs.length > 0) return { source: 'client-reference.json', inputs, outputs: tensors(parsed.outputs) };
      } catch {
        // A malformed file is the bundle author's to fix; try-it falls back to the next source.
      }
    }
    if (b.reference !== null && b.hooks === null && m.kind === 'model') {
      const file = await readSafetensors(b.reference.path);
      const side = (prefix: string, specs: readonly TensorSpec[]): RawTensor[] =>
        specs.flatMap((s) => {
          const t = file.tensor(`${prefix}.${s.name}`);
          return t ? [{ name: s.name, datatype: toWireDatatype(s.dtype), shape: t.shape, bytes: t.data }] : [];
        });
      const inputs = side('input', m.executableInputs);
      if (inputs.length === m.executableInputs.length)
        return { source: 'reference.safetensors', inputs, outputs: side('output', m.executableOutputs) };
    }
    const variant = m.inputShapes[0]?.extents;
    const inputs = clientInputSpecs(m).map((s) => {
      const shape = s.wireShape(1, variant).map((d) => (d < 0 ? 1 : d));
      const datatype = toWireDatatype(s.dtype);
      return {
        name: s.name,
        datatype,
        shape,
        bytes: generatedBytes(
          datatype,
          shape.reduce((a, c) => a * c, 1),
        ),
      };
    });
    return { source: 'generated', inputs, outputs: [] };
  }
}

/** Where #reference would take its input from, without reading the tensors. */
async function referenceSource(v: ModelVersion): Promise<ModelIoView['reference']> {
  const b = v.bundle;
  const client = await readBundleFile(join(b.dir, 'client-reference.json'), 'utf8').catch(() => null);
  if (client !== null) {
    try {
      const inputs = (JSON.parse(client) as { inputs?: unknown }).inputs;
      if (Array.isArray(inputs) && inputs.length > 0) return 'client-reference.json';
    } catch {
      // as in #reference: a malformed file falls through to the next source
    }
  }
  const m = b.manifest;
  if (b.reference !== null && b.hooks === null && m.kind === 'model') {
    const have = new Set(b.reference.inputs);
    if (m.executableInputs.every((s) => have.has(s.name))) return 'reference.safetensors';
  }
  return 'generated';
}

function tensorView(s: TensorSpec): TensorView {
  return {
    name: s.name,
    datatype: toWireDatatype(s.dtype),
    letters: s.letters,
    wireLetters: s.wireLetters,
    dims: s.dims,
    wireShape: s.wireShape(),
    wireBatchAxis: s.wireBatchAxis,
  };
}

/** JSON has no NaN or Infinity: those previews become their names. */
const finite = (x: number | string | boolean): number | string | boolean =>
  typeof x === 'number' && !Number.isFinite(x) ? String(x) : x;

function requestJson(inputs: readonly RawTensor[]): string | null {
  let elements = 0;
  for (const t of inputs) {
    if (t.datatype === 'BYTES') return null;
    elements += t.shape.reduce((a, b) => a * b, 1);
  }
  if (elements > JSON_ELEMENTS) return null;
  return JSON.stringify({
    inputs: inputs.map((t) => ({
      name: t.name,
      shape: t.shape,
      datatype: t.datatype,
      data: readValues(t.datatype, t.bytes),
    })),
  });
}

const isDir = (p: string) =>
  stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );

/** Files (top level and one folder down), bytes and the manifest's digest of a bundle folder. */
async function describeFolder(dir: string, id: string, at: number | null): Promise<BundleVersionView | null> {
  let st;
  try {
    st = await stat(dir);
  } catch {
    return null;
  }
  if (!st.isDirectory()) return null;
  let files = 0;
  let bytes = 0;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isFile()) {
      files++;
      bytes += (await stat(join(dir, e.name))).size;
    }
  }
  const manifestPath = join(dir, 'manifest.yaml');
  const text = await readBundleFile(manifestPath).catch(() => null);
  const m = text === null ? null : await readManifest(manifestPath).catch(() => null);
  return {
    id,
    current: id === 'current',
    at: at ?? Math.round(st.mtimeMs),
    files,
    bytes,
    manifestSha256: text === null ? '' : createHash('sha256').update(text).digest('hex').slice(0, 12),
    description: m?.description ?? null,
    compiledBatchSizes: m?.compiledBatchSizes ?? [],
  };
}
