/**
 * A KServe V2 inference request and response in a transport-neutral form. The gRPC and HTTP
 * front ends translate into these; the codec validates and converts them in one place.
 */

export type ParamValue = string | number | boolean;
export type Params = Readonly<Record<string, ParamValue>>;

/** No parameter set: a loop, not Object.keys, since it runs per tensor on the request path. */
export function noParams(p: Params): boolean {
  for (const k in p) if (Object.prototype.hasOwnProperty.call(p, k)) return false;
  return true;
}

export type WireData =
  | { readonly kind: 'raw'; readonly bytes: Uint8Array }
  | { readonly kind: 'typed'; readonly values: readonly unknown[]; readonly field: string }
  | { readonly kind: 'none' };

export interface WireInput {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly parameters: Params;
  readonly data: WireData;
}

export interface WireRequestedOutput {
  readonly name: string;
  readonly parameters: Params;
}

export interface WireInferRequest {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly parameters: Params;
  readonly inputs: readonly WireInput[];
  readonly outputs: readonly WireRequestedOutput[];
}

export interface WireOutput {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly parameters: Params;
  /** Absent when the output went to the client's shared memory. */
  readonly data: Uint8Array | null;
}

export interface WireInferResponse {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string;
  readonly outputs: readonly WireOutput[];
}

/** A tensor in model metadata; -1 = any extent (the batch axis included when the model batches). */
export interface TensorMetadata {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
}

export interface ModelMetadata {
  readonly name: string;
  readonly versions: readonly string[];
  readonly platform: string;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
}

export interface ServerMetadata {
  readonly name: string;
  readonly version: string;
  readonly extensions: readonly string[];
}
