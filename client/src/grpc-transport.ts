/**
 * KServe V2 over gRPC with grpc-js and the generated ts-proto messages. Tensors travel in
 * raw_input_contents / raw_output_contents (one length-delimited field per tensor), encoded by
 * @hloserve/proto's single-copy serializer. The deadline goes out as grpc-timeout; an abort
 * cancels the call, which the server sees as a cancelled stream.
 */
import {
  credentials as grpcCredentials,
  Metadata,
  type CallOptions as GrpcCallOptions,
  type ChannelCredentials,
  type ClientOptions,
  type ClientUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import {
  GRPCInferenceClient,
  type GRPCInferenceServiceClient,
  type InferParameter,
  type ModelConfig,
  type ModelInferRequest,
} from '@hloserve/proto/inference';
import { ClientError, fromGrpcError, Status } from './client-error.js';
import type { Attempt } from './deadline.js';
import type {
  ModelMetadata,
  ParamValue,
  RegionRef,
  RegionStatus,
  RepositoryModel,
  ServerMetadata,
  Transport,
  WireRequest,
  WireResponse,
} from './transport.js';

type Unary<Req, Res> = (
  req: Req,
  metadata: Metadata,
  options: Partial<GrpcCallOptions>,
  cb: (err: ServiceError | null, res: Res) => void,
) => ClientUnaryCall;

function param(v: ParamValue): InferParameter {
  if (typeof v === 'boolean') return { parameterChoice: { $case: 'boolParam', value: v } };
  if (typeof v === 'string') return { parameterChoice: { $case: 'stringParam', value: v } };
  if (Number.isInteger(v)) return { parameterChoice: { $case: 'int64Param', value: String(v) } };
  return { parameterChoice: { $case: 'doubleParam', value: v } };
}

function params(rec: Readonly<Record<string, ParamValue>>): Map<string, InferParameter> {
  const m = new Map<string, InferParameter>();
  for (const [k, v] of Object.entries(rec)) m.set(k, param(v));
  return m;
}

function regionParams(ref: RegionRef | undefined): Map<string, InferParameter> {
  if (ref === undefined) return new Map();
  return params({
    shared_memory_region: ref.region,
    shared_memory_offset: ref.offset,
    shared_memory_byte_size: ref.byteSize,
  });
}

export interface GrpcTransportOptions {
  /** Defaults to an insecure channel. */
  credentials?: ChannelCredentials;
  /** grpc-js channel options; message size limits default to unlimited (tensors are large). */
  channelOptions?: ClientOptions;
}

export class GrpcTransport implements Transport {
  readonly protocol = 'grpc' as const;
  readonly #c: GRPCInferenceServiceClient;

  constructor(url: string, opts: GrpcTransportOptions = {}) {
    this.#c = new GRPCInferenceClient(url, opts.credentials ?? grpcCredentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      ...opts.channelOptions,
    });
  }

  #call<Req, Res>(fn: Unary<Req, Res>, req: Req, a: Attempt): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const signal = a.signal;
      if (signal?.aborted) return reject(new ClientError(Status.CANCELLED, 'cancelled by the caller'));
      const options: Partial<GrpcCallOptions> = a.deadlineMs === null ? {} : { deadline: a.deadlineMs };
      const onAbort = () => call.cancel();
      const call = fn.call(this.#c, req, new Metadata(), options, (err, res) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(fromGrpcError(err));
        else resolve(res);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  toError(err: unknown): ClientError {
    return fromGrpcError(err);
  }

  async serverLive(a: Attempt): Promise<boolean> {
    return (await this.#call(this.#c.serverLive, {}, a)).live;
  }

  async serverReady(a: Attempt): Promise<boolean> {
    return (await this.#call(this.#c.serverReady, {}, a)).ready;
  }

  async serverMetadata(a: Attempt): Promise<ServerMetadata> {
    const r = await this.#call(this.#c.serverMetadata, {}, a);
    return { name: r.name, version: r.version, extensions: r.extensions };
  }

  async modelReady(a: Attempt, name: string, version: string): Promise<boolean> {
    return (await this.#call(this.#c.modelReady, { name, version }, a)).ready;
  }

  async modelMetadata(a: Attempt, name: string, version: string): Promise<ModelMetadata> {
    const r = await this.#call(this.#c.modelMetadata, { name, version }, a);
    return { name: r.name, versions: r.versions, platform: r.platform, inputs: r.inputs, outputs: r.outputs };
  }

  async modelConfig(a: Attempt, name: string, version: string): Promise<ModelConfig> {
    const r = await this.#call(this.#c.modelConfig, { name, version }, a);
    if (r.config === undefined) throw new ClientError(Status.INTERNAL, `model '${name}': the server sent no config`);
    return r.config;
  }

  async repositoryIndex(a: Attempt, readyOnly: boolean): Promise<RepositoryModel[]> {
    const r = await this.#call(this.#c.repositoryIndex, { repositoryName: '', ready: readyOnly }, a);
    return r.models.map((m) => ({ name: m.name, version: m.version, state: m.state, reason: m.reason }));
  }

  async infer(a: Attempt, req: WireRequest): Promise<WireResponse> {
    const msg: ModelInferRequest = {
      modelName: req.model,
      modelVersion: req.version,
      id: req.id,
      parameters: params(req.parameters),
      inputs: req.inputs.map((t) => ({
        name: t.name,
        datatype: t.datatype,
        shape: [...t.shape],
        parameters: regionParams(t.sharedMemory),
        contents: undefined,
      })),
      outputs: req.outputs.map((o) => ({ name: o.name, parameters: regionParams(o.sharedMemory) })),
      rawInputContents: req.inputs.flatMap((t) => (t.bytes === undefined ? [] : [t.bytes])),
    };
    const res = await this.#call(this.#c.modelInfer, msg, a);
    // hloserve (like Triton) sends one raw entry per output, empty for an output written to shared
    // memory; a server that leaves those entries out is read correctly too.
    const oneEach = res.rawOutputContents.length === res.outputs.length;
    let raw = 0;
    const outputs = res.outputs.map((o, i) => {
      const inShm = o.parameters.has('shared_memory_region');
      const entry = oneEach ? res.rawOutputContents[i] : inShm ? undefined : res.rawOutputContents[raw++];
      if (!inShm && entry === undefined) {
        throw new ClientError(Status.INTERNAL, `output '${o.name}' came without raw contents`);
      }
      return { name: o.name, datatype: o.datatype, shape: o.shape, bytes: inShm ? null : entry! };
    });
    return { model: res.modelName, version: res.modelVersion, id: res.id, outputs };
  }

  async registerSystemSharedMemory(
    a: Attempt,
    name: string,
    key: string,
    offset: number,
    byteSize: number,
  ): Promise<void> {
    await this.#call(
      this.#c.systemSharedMemoryRegister,
      { name, key, offset: String(offset), byteSize: String(byteSize) },
      a,
    );
  }

  async unregisterSystemSharedMemory(a: Attempt, name: string): Promise<void> {
    await this.#call(this.#c.systemSharedMemoryUnregister, { name }, a);
  }

  async systemSharedMemoryStatus(a: Attempt, name: string): Promise<RegionStatus[]> {
    const r = await this.#call(this.#c.systemSharedMemoryStatus, { name }, a);
    return [...r.regions.values()].map((s) => ({ name: s.name, key: s.key, offset: s.offset, byteSize: s.byteSize }));
  }

  close(): void {
    this.#c.close();
  }
}
