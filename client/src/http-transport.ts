/**
 * KServe V2 over HTTP/REST with Node's fetch (undici). Tensors go in Triton's binary-data
 * extension by default (JSON header, then the raw bytes, the JSON's length in
 * Inference-Header-Content-Length); `binary: false` sends and asks for JSON arrays instead. The
 * deadline goes out as the x-timeout-ms header; the local timer fires a little after it so the
 * server's own DEADLINE_EXCEEDED (with its catalogue code) normally arrives first.
 */
import { ModelConfig } from '@hloserve/proto/inference';
import { ClientError, fromHttpError, Status } from './client-error.js';
import { cancelled, deadlineExceeded, type Attempt } from './deadline.js';
import { arrayType, isDatatype } from './datatypes.js';
import { copyBytes, decodeBytesElements, elementCount, encodeBytesElements } from './tensor.js';
import type {
  ModelMetadata,
  RegionRef,
  RegionStatus,
  RepositoryModel,
  ServerMetadata,
  Transport,
  WireInputTensor,
  WireOutputTensor,
  WireRequest,
  WireResponse,
} from './transport.js';

/** How long after the deadline the client stops waiting for the server's own answer. */
const DEADLINE_GRACE_MS = 250;

export interface HttpTransportOptions {
  /** Binary tensors (default) or JSON arrays, both ways. */
  binary?: boolean;
  /** Extra headers on every request (an Authorization header, say). */
  headers?: Record<string, string>;
}

interface JsonOutput {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: Record<string, unknown>;
  data?: unknown[];
}

const regionJson = (ref: RegionRef) => ({
  shared_memory_region: ref.region,
  shared_memory_offset: ref.offset,
  shared_memory_byte_size: ref.byteSize,
});

/** Raw little-endian bytes -> the JSON array the HTTP protocol's `data` field holds. */
function jsonData(t: WireInputTensor): unknown[] {
  const bytes = t.bytes!;
  if (t.datatype === 'BYTES') {
    const dec = new TextDecoder();
    return decodeBytesElements(bytes, elementCount(t.shape)).map((e) => dec.decode(e));
  }
  const dt = t.datatype;
  if (!isDatatype(dt) || dt === 'BYTES' || dt === 'FP16' || dt === 'BF16') {
    throw new ClientError(Status.INVALID_ARGUMENT, `input '${t.name}': ${dt} can only travel as binary data`);
  }
  const Ctor = arrayType(dt);
  const aligned = bytes.byteOffset % Ctor.BYTES_PER_ELEMENT === 0 ? bytes : copyBytes(bytes);
  const arr = new Ctor(aligned.buffer, aligned.byteOffset, aligned.byteLength / Ctor.BYTES_PER_ELEMENT);
  if (t.datatype === 'BOOL') return Array.from(arr as Uint8Array, (v) => v !== 0);
  if (arr instanceof BigInt64Array || arr instanceof BigUint64Array) return Array.from(arr, (v) => Number(v));
  return Array.from(arr as ArrayLike<number>);
}

/** A JSON `data` array -> raw little-endian bytes. */
function bytesOfJson(o: JsonOutput): Uint8Array {
  const data = o.data ?? [];
  if (o.datatype === 'BYTES') {
    const enc = new TextEncoder();
    return encodeBytesElements(data.map((v) => enc.encode(String(v))));
  }
  const dt = o.datatype;
  if (!isDatatype(dt) || dt === 'BYTES') {
    throw new ClientError(Status.INTERNAL, `output '${o.name}': unknown datatype ${dt}`);
  }
  const Ctor = arrayType(dt);
  const arr = new Ctor(data.length);
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    (arr as unknown as (number | bigint)[])[i] =
      arr instanceof BigInt64Array || arr instanceof BigUint64Array ? BigInt(v as number) : Number(v);
  }
  return new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
}

export class HttpTransport implements Transport {
  readonly protocol = 'http' as const;
  readonly #base: string;
  readonly #binary: boolean;
  readonly #headers: Record<string, string>;

  constructor(url: string, opts: HttpTransportOptions = {}) {
    this.#base = (/^https?:\/\//.test(url) ? url : `http://${url}`).replace(/\/+$/, '');
    this.#binary = opts.binary ?? true;
    this.#headers = opts.headers ?? {};
  }

  toError(err: unknown): ClientError {
    if (err instanceof ClientError) return err;
    return new ClientError(Status.UNAVAILABLE, `HTTP request failed: ${(err as Error).message ?? String(err)}`, {
      cause: err,
    });
  }

  /** One HTTP exchange under the attempt's deadline and signal; non-2xx answers become ClientErrors. */
  async #fetch(
    a: Attempt,
    method: string,
    path: string,
    init: { body?: Uint8Array; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...this.#headers, ...init.headers };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const local = new AbortController();
    let timedOut = false;
    if (a.deadlineMs !== null) {
      const left = a.deadlineMs - Date.now();
      if (left <= 0) throw deadlineExceeded(`${method} ${path}`);
      headers['x-timeout-ms'] = String(Math.max(1, Math.ceil(left)));
      timer = setTimeout(() => {
        timedOut = true;
        local.abort();
      }, left + DEADLINE_GRACE_MS);
    }
    const signal = a.signal === undefined ? local.signal : AbortSignal.any([a.signal, local.signal]);
    try {
      const res = await fetch(`${this.#base}${path}`, { method, headers, body: init.body, signal });
      const body = new Uint8Array(await res.arrayBuffer());
      if (!res.ok) {
        const e = fromHttpError(res.status, new TextDecoder().decode(body));
        throw e;
      }
      return { res, body };
    } catch (err) {
      if (err instanceof ClientError) throw err;
      if (timedOut) throw deadlineExceeded(`${method} ${path}`);
      if (a.signal?.aborted) throw cancelled(`${method} ${path}`, a.signal.reason);
      throw this.toError(err);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  async #json<T>(a: Attempt, method: string, path: string, payload?: unknown): Promise<T> {
    const init =
      payload === undefined
        ? {}
        : { body: Buffer.from(JSON.stringify(payload)), headers: { 'content-type': 'application/json' } };
    const { body } = await this.#fetch(a, method, path, init);
    const text = new TextDecoder().decode(body);
    return (text === '' ? {} : JSON.parse(text)) as T;
  }

  /** Health and readiness answer with a status only: 200 is yes, anything else no. */
  async #ok(a: Attempt, path: string): Promise<boolean> {
    try {
      await this.#fetch(a, 'GET', path);
      return true;
    } catch (err) {
      if (err instanceof ClientError && err.httpStatus !== undefined && err.httpStatus < 500) return false;
      throw err;
    }
  }

  serverLive(a: Attempt): Promise<boolean> {
    return this.#ok(a, '/v2/health/live');
  }

  serverReady(a: Attempt): Promise<boolean> {
    return this.#ok(a, '/v2/health/ready');
  }

  async serverMetadata(a: Attempt): Promise<ServerMetadata> {
    const r = await this.#json<ServerMetadata>(a, 'GET', '/v2');
    return { name: r.name, version: r.version, extensions: r.extensions ?? [] };
  }

  modelReady(a: Attempt, name: string, version: string): Promise<boolean> {
    return this.#ok(a, `${modelPath(name, version)}/ready`);
  }

  async modelMetadata(a: Attempt, name: string, version: string): Promise<ModelMetadata> {
    const r = await this.#json<ModelMetadata>(a, 'GET', modelPath(name, version));
    return {
      name: r.name,
      versions: r.versions ?? [],
      platform: r.platform ?? '',
      inputs: r.inputs,
      outputs: r.outputs,
    };
  }

  async modelConfig(a: Attempt, name: string, version: string): Promise<ModelConfig> {
    const r = await this.#json<{ config?: unknown }>(a, 'GET', `${modelPath(name, version)}/config`);
    return ModelConfig.fromJSON(r.config ?? r);
  }

  async repositoryIndex(a: Attempt, readyOnly: boolean): Promise<RepositoryModel[]> {
    const r = await this.#json<Partial<RepositoryModel>[]>(a, 'POST', '/v2/repository/index', { ready: readyOnly });
    return r.map((m) => ({
      name: m.name ?? '',
      version: m.version ?? '',
      state: m.state ?? '',
      reason: m.reason ?? '',
    }));
  }

  async infer(a: Attempt, req: WireRequest): Promise<WireResponse> {
    const binary = this.#binary;
    const chunks: Uint8Array[] = [];
    const inputs = req.inputs.map((t) => {
      const base = { name: t.name, datatype: t.datatype, shape: t.shape };
      if (t.sharedMemory !== undefined) return { ...base, parameters: regionJson(t.sharedMemory) };
      if (!binary) return { ...base, data: jsonData(t) };
      chunks.push(t.bytes!);
      return { ...base, parameters: { binary_data_size: t.bytes!.byteLength } };
    });
    const outputs = req.outputs.map((o) => ({
      name: o.name,
      parameters: o.sharedMemory !== undefined ? regionJson(o.sharedMemory) : { binary_data: binary },
    }));
    const header = Buffer.from(
      JSON.stringify({
        ...(req.id ? { id: req.id } : {}),
        parameters: { ...req.parameters, ...(binary ? { binary_data_output: true } : {}) },
        inputs,
        ...(outputs.length > 0 ? { outputs } : {}),
      }),
    );
    const headers: Record<string, string> = {};
    let body: Uint8Array = header;
    if (chunks.length > 0) {
      headers['content-type'] = 'application/octet-stream';
      headers['inference-header-content-length'] = String(header.byteLength);
      body = Buffer.concat([header, ...chunks]);
    } else {
      headers['content-type'] = 'application/json';
    }
    const { res, body: resBody } = await this.#fetch(a, 'POST', `${modelPath(req.model, req.version)}/infer`, {
      body,
      headers,
    });
    const lenHeader = res.headers.get('inference-header-content-length');
    const jsonLen = lenHeader === null ? resBody.byteLength : Number(lenHeader);
    const parsed = JSON.parse(new TextDecoder().decode(resBody.subarray(0, jsonLen))) as {
      model_name: string;
      model_version: string;
      id?: string;
      outputs: JsonOutput[];
    };
    let at = jsonLen;
    const outs: WireOutputTensor[] = parsed.outputs.map((o) => {
      const base = { name: o.name, datatype: o.datatype, shape: o.shape };
      if (o.parameters?.shared_memory_region !== undefined) return { ...base, bytes: null };
      const size = o.parameters?.binary_data_size;
      if (typeof size === 'number') {
        if (at + size > resBody.byteLength) {
          throw new ClientError(Status.INTERNAL, `output '${o.name}': binary data runs past the response`);
        }
        const bytes = resBody.subarray(at, at + size);
        at += size;
        return { ...base, bytes };
      }
      return { ...base, bytes: bytesOfJson(o) };
    });
    return { model: parsed.model_name, version: parsed.model_version, id: parsed.id ?? '', outputs: outs };
  }

  async registerSystemSharedMemory(
    a: Attempt,
    name: string,
    key: string,
    offset: number,
    byteSize: number,
  ): Promise<void> {
    await this.#json(a, 'POST', `/v2/systemsharedmemory/region/${encodeURIComponent(name)}/register`, {
      key,
      offset,
      byte_size: byteSize,
    });
  }

  async unregisterSystemSharedMemory(a: Attempt, name: string): Promise<void> {
    const path = name === '' ? '' : `/region/${encodeURIComponent(name)}`;
    await this.#json(a, 'POST', `/v2/systemsharedmemory${path}/unregister`, {});
  }

  async systemSharedMemoryStatus(a: Attempt, name: string): Promise<RegionStatus[]> {
    const path = name === '' ? '' : `/region/${encodeURIComponent(name)}`;
    const r = await this.#json<{ name: string; key: string; offset: number; byte_size: number }[]>(
      a,
      'GET',
      `/v2/systemsharedmemory${path}/status`,
    );
    return r.map((s) => ({ name: s.name, key: s.key, offset: s.offset, byteSize: s.byte_size }));
  }

  close(): void {
    // fetch pools its connections globally; nothing is held per client.
  }
}

function modelPath(name: string, version: string): string {
  const m = `/v2/models/${encodeURIComponent(name)}`;
  return version === '' ? m : `${m}/versions/${encodeURIComponent(version)}`;
}
