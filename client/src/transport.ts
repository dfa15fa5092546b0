/**
 * What the client asks of a protocol. The gRPC and HTTP transports each implement it; the model
 * handle, retries and shared memory sit above and never see which one is in use.
 */
import type { ModelMetadata, ServerMetadata } from '@hloserve/common/wire';
import type { ModelConfig } from '@hloserve/proto/inference';
import type { ClientError } from './client-error.js';
import type { Attempt } from './deadline.js';

export type ParamValue = string | number | boolean;

/** A tensor's place in a registered system shared-memory region. */
export interface RegionRef {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

export interface WireInputTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  /** Inline bytes, or absent when the tensor is in shared memory. */
  readonly bytes?: Uint8Array;
  readonly sharedMemory?: RegionRef;
}

export interface WireRequestedOutput {
  readonly name: string;
  readonly sharedMemory?: RegionRef;
}

export interface WireRequest {
  readonly model: string;
  readonly version: string;
  readonly id: string;
  readonly parameters: Readonly<Record<string, ParamValue>>;
  readonly inputs: readonly WireInputTensor[];
  /** Empty: every output, inline. */
  readonly outputs: readonly WireRequestedOutput[];
}

export interface WireOutputTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  /** Null when the server wrote the output into shared memory. */
  readonly bytes: Uint8Array | null;
}

export interface WireResponse {
  readonly model: string;
  readonly version: string;
  readonly id: string;
  readonly outputs: readonly WireOutputTensor[];
}

export type { ModelMetadata, ServerMetadata, TensorMetadata } from '@hloserve/common/wire';

export interface RepositoryModel {
  readonly name: string;
  readonly version: string;
  readonly state: string;
  readonly reason: string;
}

export interface RegionStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byteSize: number;
}

export interface Transport {
  readonly protocol: 'grpc' | 'http';
  serverLive(a: Attempt): Promise<boolean>;
  serverReady(a: Attempt): Promise<boolean>;
  serverMetadata(a: Attempt): Promise<ServerMetadata>;
  modelReady(a: Attempt, name: string, version: string): Promise<boolean>;
  modelMetadata(a: Attempt, name: string, version: string): Promise<ModelMetadata>;
  modelConfig(a: Attempt, name: string, version: string): Promise<ModelConfig>;
  repositoryIndex(a: Attempt, readyOnly: boolean): Promise<RepositoryModel[]>;
  infer(a: Attempt, req: WireRequest): Promise<WireResponse>;
  registerSystemSharedMemory(a: Attempt, name: string, key: string, offset: number, byteSize: number): Promise<void>;
  unregisterSystemSharedMemory(a: Attempt, name: string): Promise<void>;
  systemSharedMemoryStatus(a: Attempt, name: string): Promise<RegionStatus[]>;
  /** Any failure of this transport as a ClientError. */
  toError(err: unknown): ClientError;
  close(): void;
}
