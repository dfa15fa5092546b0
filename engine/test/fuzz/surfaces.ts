import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import fc from 'fast-check';
import { ERROR_CATALOGUE, isServeError } from '@hloserve/common/errors';
import {
  encodeModelInferRequest,
  ModelInferRequest,
  SystemSharedMemoryRegisterRequest,
  SystemSharedMemoryStatusRequest,
  SystemSharedMemoryUnregisterRequest,
} from '@hloserve/proto';
import { parseManifest } from '../../src/bundle/manifest.js';
import { parseSafetensors } from '../../src/bundle/safetensors.js';
import { encodeSafetensors } from '../../src/bundle/safetensors-writer.js';
import { parseHttpInfer } from '../../src/transports/http-infer-body.js';
import { examples, type Surface } from '../transports/surface.js';

/**
 * Property-based fuzzing of the inference surface and the bundle parsers. Each target turns a
 * generated input into one call and says what, if anything, was wrong with the answer: a status
 * outside the catalogue, an exception that is not a ServeError, no answer in time, or a valid
 * request that failed right after. The short run in npm test and bench/fuzz.mjs share these.
 */

export interface Target<T = unknown> {
  readonly name: string;
  /** Runs in-process without a server (parsers): far faster, so long runs weight them. */
  readonly pure: boolean;
  readonly arbitrary: fc.Arbitrary<T>;
  /** null when the answer was in the catalogue (and, for servers, a valid request then succeeded). */
  run(input: T): Promise<string | null>;
}

const GRPC_CODES = new Set<number>([GrpcStatus.OK, ...Object.values(ERROR_CATALOGUE).map((s) => s.grpc)]);
/** The HTTP statuses and error codes a served answer may carry (the catalogue's, and 200). */
export const HTTP_CODES = new Set<number>([200, ...Object.values(ERROR_CATALOGUE).map((s) => s.http)]);
export const CODES = new Set<string>(Object.keys(ERROR_CATALOGUE));
const N = 784;
const HANG_MS = 15_000;

/** `p`, or a rejection naming `what` once HANG_MS pass without an answer. */
export function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`hang: ${what} unanswered after ${HANG_MS} ms`)), HANG_MS);
    }),
  ]);
}

/** A pure parser's verdict: returning or throwing a catalogue ServeError are both fine. */
function judgeThrow(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (isServeError(err) && CODES.has(err.code)) return null;
    return `threw ${(err as Error)?.name}: ${String((err as Error)?.message).slice(0, 200)}`;
  }
}

/** Random edits of a valid input: byte flips, insertions, deletions, truncation, splices. */
function mutated(base: Uint8Array): fc.Arbitrary<Uint8Array> {
  const edit = fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), v: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 16 }) }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), n: fc.integer({ min: 1, max: 16 }) }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({
      kind: fc.constant('token' as const),
      at: fc.nat(),
      text: fc.constantFrom(
        '[',
        ']',
        '{',
        '}',
        ',',
        ':',
        '"',
        '\\',
        '1e400',
        '-',
        'null',
        '9'.repeat(30),
        '[[[[',
        '\u0000',
      ),
    }),
  );
  return fc.array(edit, { minLength: 1, maxLength: 4 }).map((edits) => {
    let b = Buffer.from(base);
    for (const e of edits) {
      const at = b.byteLength === 0 ? 0 : e.at % (b.byteLength + 1);
      if (e.kind === 'flip' && at < b.byteLength) b[at] = e.v;
      else if (e.kind === 'insert') b = Buffer.concat([b.subarray(0, at), e.bytes, b.subarray(at)]);
      else if (e.kind === 'delete') b = Buffer.concat([b.subarray(0, at), b.subarray(at + e.n)]);
      else if (e.kind === 'truncate') b = b.subarray(0, at);
      else if (e.kind === 'token') b = Buffer.concat([b.subarray(0, at), Buffer.from(e.text), b.subarray(at)]);
    }
    return new Uint8Array(b);
  });
}

// ---------------------------------------------------------------------------------------------
// Bundle parsers

const manifestText = readFileSync(join(examples, 'mlp', 'manifest.yaml'));

export const manifestTarget: Target<string> = {
  name: 'manifest',
  pure: true,
  arbitrary: fc.oneof(
    { weight: 4, arbitrary: mutated(manifestText).map((b) => Buffer.from(b).toString('utf8')) },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
    {
      weight: 1,
      arbitrary: fc
        .dictionary(
          fc.constantFrom('format_version', 'name', 'kind', 'executable_inputs', 'executable_outputs', 'batching', 'x'),
          fc.jsonValue({ maxDepth: 3 }),
        )
        .map((o) => JSON.stringify(o)),
    },
  ),
  run: async (text) => judgeThrow(() => parseManifest(text, 'fuzz/manifest.yaml')),
};

const safetensorsFile = encodeSafetensors(
  [
    { name: 'w', dtype: 'f32', shape: [2, 3], data: new Float32Array(6) },
    { name: 'b', dtype: 'i64', shape: [3], data: new BigInt64Array(3) },
  ],
  { metadata: { k: 'v' } },
);

export const safetensorsTarget: Target<Uint8Array> = {
  name: 'safetensors',
  pure: true,
  arbitrary: fc.oneof(
    { weight: 4, arbitrary: mutated(safetensorsFile) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }) },
    {
      weight: 2,
      // A well-formed length prefix before a generated header: reaches the header checks.
      arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => {
        const json = Buffer.from(JSON.stringify(v));
        const len = Buffer.alloc(8);
        len.writeBigUInt64LE(BigInt(json.byteLength));
        return new Uint8Array(Buffer.concat([len, json, Buffer.alloc(32)]));
      }),
    },
  ),
  run: async (bytes) => judgeThrow(() => parseSafetensors(bytes, 'fuzz/weights.safetensors')),
};

// ---------------------------------------------------------------------------------------------
// HTTP bodies

const dims = fc.oneof(fc.constantFrom(1, N, 0, -1, 2 ** 31, 2 ** 53, 1e300, 1.5), fc.integer({ min: 0, max: 40 }));
const scalar = fc.oneof(
  { weight: 6, arbitrary: fc.double() },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.constantFrom(true, false, null, '1', 'x', 1e308, -0) },
);
const jsonData = fc.oneof(
  fc.array(scalar, { maxLength: 40 }),
  fc.array(fc.array(scalar, { maxLength: 6 }), { maxLength: 6 }),
  fc.jsonValue({ maxDepth: 4 }),
  fc.constant(Array.from({ length: N }, () => 0.5)),
);
const params = fc.option(
  fc.dictionary(
    fc.constantFrom('timeout', 'binary_data_size', 'shared_memory_region', 'priority', 'binary_data', 'x'),
    fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.string({ maxLength: 20 }), fc.constant(9.3e18)),
  ),
  { nil: undefined },
);
const inferDoc = fc.record(
  {
    id: fc.oneof(fc.string({ maxLength: 8 }), fc.integer()),
    parameters: params,
    inputs: fc.array(
      fc.record(
        {
          name: fc.oneof({ weight: 4, arbitrary: fc.constant('x') }, fc.string({ maxLength: 10 })),
          datatype: fc.constantFrom('FP32', 'FP16', 'INT64', 'UINT8', 'BOOL', 'BYTES', 'BF16', 'FP64', 'nope', ''),
          shape: fc.oneof(fc.array(dims, { maxLength: 4 }), fc.constant([1, N]), fc.jsonValue({ maxDepth: 2 })),
          data: jsonData,
          parameters: params,
        },
        { requiredKeys: ['name', 'datatype', 'shape'] },
      ),
      { maxLength: 3 },
    ),
    outputs: fc.option(fc.array(fc.record({ name: fc.constantFrom('logits', 'y', '') }), { maxLength: 2 }), {
      nil: undefined,
    }),
  },
  { requiredKeys: ['inputs'] },
);

/** A valid mlp request with one part replaced: reaches the checks past parsing, and inference. */
const nearValidDoc = fc
  .record({
    part: fc.constantFrom('none', 'datatype', 'shape', 'data', 'value', 'parameters', 'outputs', 'rows'),
    datatype: fc.constantFrom('FP32', 'FP64', 'INT32', 'BYTES', 'BOOL'),
    shape: fc.array(dims, { maxLength: 3 }),
    data: jsonData,
    value: scalar,
    at: fc.nat({ max: N - 1 }),
    parameters: params,
    outputs: fc.array(fc.record({ name: fc.constantFrom('logits', 'y'), parameters: params }), { maxLength: 2 }),
    rows: fc.integer({ min: 1, max: 40 }),
  })
  .map((m) => {
    const data: unknown[] = new Array(N).fill(0.25);
    const input: Record<string, unknown> = { name: 'x', datatype: 'FP32', shape: [1, N], data };
    const doc: Record<string, unknown> = { inputs: [input] };
    if (m.part === 'datatype') input.datatype = m.datatype;
    else if (m.part === 'shape') input.shape = m.shape;
    else if (m.part === 'data') input.data = m.data;
    else if (m.part === 'value') data[m.at] = m.value;
    else if (m.part === 'parameters') doc.parameters = m.parameters;
    else if (m.part === 'outputs') doc.outputs = m.outputs;
    else if (m.part === 'rows') {
      input.shape = [m.rows, N];
      input.data = Array.from({ length: m.rows }, () => data);
    }
    return doc;
  });

export const validJson = Buffer.from(
  JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, N], data: new Array(N).fill(0.25) }] }),
);

export interface HttpInput {
  readonly body: Uint8Array;
  readonly headerLength?: string;
}

export const httpJson: fc.Arbitrary<HttpInput> = fc.oneof(
  { weight: 3, arbitrary: inferDoc.map((d) => ({ body: Buffer.from(JSON.stringify(d)) })) },
  { weight: 3, arbitrary: nearValidDoc.map((d) => ({ body: Buffer.from(JSON.stringify(d)) })) },
  { weight: 3, arbitrary: mutated(validJson).map((body) => ({ body })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 100 }).map((s) => ({ body: Buffer.from(s) })) },
);

const nearValidBinary: fc.Arbitrary<HttpInput> = fc
  .record({
    part: fc.constantFrom('none', 'size', 'tail', 'header', 'datatype', 'output'),
    n: fc.integer({ min: -4, max: 4 }),
    datatype: fc.constantFrom('FP16', 'BF16', 'INT32', 'UINT8', 'BYTES'),
  })
  .map(({ part, n, datatype }) => {
    const size = N * 4 + (part === 'size' ? n : 0);
    const doc = {
      inputs: [
        {
          name: 'x',
          datatype: part === 'datatype' ? datatype : 'FP32',
          shape: [1, N],
          parameters: { binary_data_size: size },
        },
      ],
      outputs: [{ name: 'logits', parameters: { binary_data: part !== 'output' } }],
    };
    const json = Buffer.from(JSON.stringify(doc));
    const body = Buffer.concat([json, Buffer.alloc(Math.max(0, N * 4 + (part === 'tail' ? n : 0)), 0x3e)]);
    const headerLength = String(json.byteLength + (part === 'header' ? n : 0));
    return { body: new Uint8Array(body), headerLength };
  });

const randomBinary: fc.Arbitrary<HttpInput> = fc
  .record({
    doc: inferDoc,
    size: fc.oneof(fc.constant(N * 4), fc.integer({ min: -5, max: 5000 }), fc.constant(2 ** 53)),
    tail: fc.oneof(fc.constant(N * 4), fc.integer({ min: 0, max: 5000 })),
    header: fc.oneof(
      fc.constant('exact'),
      fc.string({ maxLength: 12 }),
      fc.integer({ min: -10, max: 100_000 }).map(String),
    ),
  })
  .map(({ doc, size, tail, header }) => {
    const d = {
      ...doc,
      inputs: doc.inputs.map((i) => ({
        ...i,
        data: undefined,
        parameters: { ...i.parameters, binary_data_size: size },
      })),
    };
    const json = Buffer.from(JSON.stringify(d));
    const body = Buffer.concat([json, Buffer.alloc(tail, 7)]);
    return { body: new Uint8Array(body), headerLength: header === 'exact' ? String(json.byteLength) : header };
  });

export const httpBinary: fc.Arbitrary<HttpInput> = fc.oneof(randomBinary, nearValidBinary);

export const jsonCodecTarget: Target<HttpInput> = {
  name: 'http-json-codec',
  pure: true,
  arbitrary: fc.oneof(httpJson, httpBinary),
  run: async (x) => judgeThrow(() => parseHttpInfer('mlp', '', x.body, x.headerLength, 8 << 20)),
};

async function validHttp(s: Surface): Promise<string | null> {
  const r = await s.http.inject({ method: 'POST', url: '/v2/models/mlp/infer', payload: validJson });
  return r.statusCode === 200 ? null : `a valid HTTP request then failed: ${r.statusCode} ${r.body.slice(0, 200)}`;
}

async function judgeHttp(s: Surface, r: { statusCode: number; body: string }): Promise<string | null> {
  if (!HTTP_CODES.has(r.statusCode)) return `HTTP ${r.statusCode} is outside the catalogue: ${r.body.slice(0, 200)}`;
  if (r.statusCode !== 200) {
    let code: unknown;
    try {
      code = (JSON.parse(r.body) as { code?: unknown }).code;
    } catch {
      return `HTTP ${r.statusCode} without a JSON error body: ${r.body.slice(0, 200)}`;
    }
    if (typeof code !== 'string' || !CODES.has(code)) return `HTTP ${r.statusCode} with code ${String(code)}`;
  }
  return validHttp(s);
}

export function httpTargets(s: Surface): Target<HttpInput>[] {
  const send = async (x: HttpInput) => {
    const r = await withTimeout(
      s.http.inject({
        method: 'POST',
        url: '/v2/models/mlp/infer',
        payload: Buffer.from(x.body),
        headers: {
          'content-type': 'application/octet-stream',
          ...(x.headerLength === undefined ? {} : { 'inference-header-content-length': x.headerLength }),
        },
      }),
      'HTTP infer',
    );
    return judgeHttp(s, r);
  };
  return [
    { name: 'http-json', pure: false, arbitrary: httpJson, run: send },
    { name: 'http-binary', pure: false, arbitrary: httpBinary, run: send },
  ];
}

// ---------------------------------------------------------------------------------------------
// gRPC messages

const validGrpc = encodeModelInferRequest(
  ModelInferRequest.fromPartial({
    modelName: 'mlp',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, N] }],
    rawInputContents: [new Uint8Array(new Float32Array(N).fill(0.25).buffer)],
  }),
);

const param = fc.oneof(
  fc.boolean().map((value) => ({ parameterChoice: { $case: 'boolParam' as const, value } })),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((v) => ({
    parameterChoice: { $case: 'int64Param' as const, value: v.toString() },
  })),
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => ({
    parameterChoice: { $case: 'uint64Param' as const, value: v.toString() },
  })),
  fc.double().map((value) => ({ parameterChoice: { $case: 'doubleParam' as const, value } })),
  fc.string({ maxLength: 12 }).map((value) => ({ parameterChoice: { $case: 'stringParam' as const, value } })),
);
const paramMap = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'timeout',
        'shared_memory_region',
        'shared_memory_offset',
        'shared_memory_byte_size',
        'priority',
        'k',
      ),
      param,
    ),
    { maxLength: 3 },
  )
  .map((e) => new Map(e));

const inferMessage = fc.record({
  modelName: fc.oneof({ weight: 5, arbitrary: fc.constant('mlp') }, fc.string({ maxLength: 10 })),
  modelVersion: fc.constantFrom('', '1', '2', 'x'),
  id: fc.string({ maxLength: 6 }),
  parameters: paramMap,
  inputs: fc.array(
    fc.record({
      name: fc.oneof({ weight: 4, arbitrary: fc.constant('x') }, fc.string({ maxLength: 6 })),
      datatype: fc.constantFrom('FP32', 'FP16', 'INT64', 'UINT64', 'BOOL', 'BYTES', 'INT8', 'nope'),
      shape: fc.oneof(fc.constant([1, N]), fc.array(fc.integer({ min: -2, max: 2000 }), { maxLength: 4 })),
      parameters: paramMap,
      contents: fc.option(
        fc.record(
          {
            fp32Contents: fc.array(fc.float({ noNaN: false }), { maxLength: 20 }),
            int64Contents: fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String), {
              maxLength: 5,
            }),
            uint64Contents: fc.array(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String), { maxLength: 5 }),
            bytesContents: fc.array(fc.uint8Array({ maxLength: 8 }), { maxLength: 4 }),
            boolContents: fc.array(fc.boolean(), { maxLength: 4 }),
          },
          { requiredKeys: [] },
        ),
        { nil: undefined },
      ),
    }),
    { maxLength: 3 },
  ),
  outputs: fc.array(fc.record({ name: fc.constantFrom('logits', 'nope'), parameters: paramMap }), { maxLength: 2 }),
  rawInputContents: fc.oneof(
    fc.constant([new Uint8Array(new Float32Array(N).buffer)]),
    fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 3 }),
  ),
});

/** A valid ModelInfer with one part replaced. */
const nearValidGrpc = fc
  .record({
    part: fc.constantFrom('none', 'shape', 'raw', 'params', 'outputs', 'datatype', 'contents'),
    shape: fc.array(fc.integer({ min: -2, max: 2000 }), { maxLength: 3 }),
    raw: fc.integer({ min: -8, max: 8 }),
    parameters: paramMap,
    outputs: fc.array(fc.record({ name: fc.constantFrom('logits', 'nope'), parameters: paramMap }), { maxLength: 2 }),
    datatype: fc.constantFrom('FP64', 'INT32', 'BYTES', 'FP16'),
    fp32: fc.array(fc.float(), { minLength: N - 1, maxLength: N + 1 }),
  })
  .map((m) =>
    encodeModelInferRequest(
      asRequest({
        modelName: 'mlp',
        parameters: m.part === 'params' ? m.parameters : new Map(),
        inputs: [
          {
            name: 'x',
            datatype: m.part === 'datatype' ? m.datatype : 'FP32',
            shape: m.part === 'shape' ? m.shape : [1, N],
            ...(m.part === 'contents' ? { contents: { fp32Contents: m.fp32 } } : {}),
          },
        ],
        outputs: m.part === 'outputs' ? m.outputs : [],
        rawInputContents:
          m.part === 'contents' ? [] : [new Uint8Array(Math.max(0, N * 4 + (m.part === 'raw' ? m.raw : 0)))],
      }),
    ),
  );

const grpcBytes: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 3, arbitrary: nearValidGrpc },
  { weight: 3, arbitrary: inferMessage.map((m) => encodeModelInferRequest(asRequest(m))) },
  { weight: 3, arbitrary: mutated(validGrpc).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
);

/** Generated messages are built loosely typed (a Map of any key): fromPartial fills the rest. */
const asRequest = (m: unknown): ModelInferRequest =>
  ModelInferRequest.fromPartial(m as Parameters<typeof ModelInferRequest.fromPartial>[0]);

async function validGrpcCall(s: Surface): Promise<string | null> {
  const r = await withTimeout(s.unary('ModelInfer', validGrpc), 'valid ModelInfer');
  return r.err ? `a valid gRPC request then failed: ${r.err.code} ${r.err.details}` : null;
}

async function judgeGrpc(s: Surface, method: string, body: Buffer): Promise<string | null> {
  const r = await withTimeout(s.unary(method, body), method);
  const code = r.err ? r.err.code : GrpcStatus.OK;
  if (!GRPC_CODES.has(code)) return `${method}: status ${code} is outside the catalogue: ${r.err?.details}`;
  if (code === GrpcStatus.INTERNAL) return `${method}: INTERNAL: ${r.err?.details}`;
  return validGrpcCall(s);
}

/** The shm object the shared-memory target may register (its own, under /dev/shm). */
export const FUZZ_SHM_KEY = `hlofuzz-${process.pid}`;

export function grpcTargets(s: Surface): Target[] {
  const shmKey = fc.oneof(
    fc.constant(`/${FUZZ_SHM_KEY}`),
    fc.constantFrom('/', '', '/..', '/.', '//x', '/dev/shm/x', '../../etc/passwd'),
    // Never the name of someone else's object: anything valid-looking gets a private prefix.
    fc
      .string({ maxLength: 12 })
      .map((k) => (/^\/?[A-Za-z0-9._-]+$/.test(k) ? `/hlofuzz-none-${k.replace(/^\//, '')}` : k)),
  );
  const u64 = fc.oneof(
    fc.integer({ min: 0, max: 8192 }).map(String),
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
  );
  const shmCall = fc.oneof(
    fc.record({ name: fc.string({ maxLength: 8 }), key: shmKey, offset: u64, byteSize: u64 }).map((m) => ({
      method: 'SystemSharedMemoryRegister',
      body: Buffer.from(SystemSharedMemoryRegisterRequest.encode(m).finish()),
    })),
    fc.string({ maxLength: 8 }).map((name) => ({
      method: 'SystemSharedMemoryStatus',
      body: Buffer.from(SystemSharedMemoryStatusRequest.encode({ name }).finish()),
    })),
    fc.string({ maxLength: 8 }).map((name) => ({
      method: 'SystemSharedMemoryUnregister',
      body: Buffer.from(SystemSharedMemoryUnregisterRequest.encode({ name }).finish()),
    })),
    inferMessage.map((m) => ({
      method: 'ModelInfer',
      body: encodeModelInferRequest(
        asRequest({
          ...m,
          rawInputContents: [],
          inputs: m.inputs.map((i) => ({
            ...i,
            contents: undefined,
            parameters: new Map([
              ['shared_memory_region', { parameterChoice: { $case: 'stringParam', value: 'r' } }],
              ...i.parameters,
            ]),
          })),
        }),
      ),
    })),
    mutated(
      Buffer.from(
        SystemSharedMemoryRegisterRequest.encode({
          name: 'r',
          key: `/${FUZZ_SHM_KEY}`,
          offset: '0',
          byteSize: '4096',
        }).finish(),
      ),
    ).map((b) => ({ method: 'SystemSharedMemoryRegister', body: Buffer.from(b) })),
  );
  return [
    { name: 'grpc-infer', pure: false, arbitrary: grpcBytes, run: (b: Buffer) => judgeGrpc(s, 'ModelInfer', b) },
    {
      name: 'grpc-shm',
      pure: false,
      arbitrary: shmCall,
      run: (c: { method: string; body: Buffer }) => judgeGrpc(s, c.method, c.body),
    } as Target,
  ];
}

/** Creates the target's shm object (8 KiB of zeros); returns its cleanup. */
export function createFuzzShm(): () => void {
  const path = join('/dev/shm', FUZZ_SHM_KEY);
  writeFileSync(path, Buffer.alloc(8192));
  return () => rmSync(path, { force: true });
}

export interface RunStats {
  executions: number;
  findings: { target: string; input: string; problem: string }[];
}

/** Runs `count` generated inputs of one target (seeded, reproducible), collecting findings. */
export async function runTarget<T>(target: Target<T>, count: number, seed: number, stats: RunStats): Promise<void> {
  const inputs = fc.sample(target.arbitrary, { numRuns: count, seed });
  for (const input of inputs) {
    let problem: string | null;
    try {
      problem = await target.run(input);
    } catch (err) {
      problem = `the harness saw ${(err as Error).message}`;
    }
    stats.executions++;
    if (problem !== null) stats.findings.push({ target: target.name, input: describe(input), problem });
  }
}

/** The short seeded run the test suites make of a target: every input executed, no finding. */
export async function expectNoFindings<T>(target: Target<T>, count: number, seed: number): Promise<void> {
  const stats: RunStats = { executions: 0, findings: [] };
  await runTarget(target, count, seed, stats);
  assert.equal(stats.executions, count);
  assert.deepEqual(stats.findings, []);
}

function describe(x: unknown): string {
  const text =
    x instanceof Uint8Array
      ? Buffer.from(x).toString('base64')
      : JSON.stringify(x, (_k, v: unknown) =>
          v instanceof Uint8Array
            ? Buffer.from(v).toString('base64')
            : typeof v === 'bigint'
              ? v.toString()
              : v instanceof Map
                ? [...v]
                : v,
        );
  return text.length > 400 ? `${text.slice(0, 400)}... (${text.length} chars)` : text;
}
