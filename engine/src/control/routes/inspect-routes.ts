/**
 * What the console's model detail and queues screens read, and the two things they do there:
 * GET /models/:name/io, /histograms and /versions, GET /queues; POST /models/:name/rollback
 * (audited: it changes the repository and what serves) and POST /models/:name/try (operator
 * scope, not audited: an inference changes no state, like a KServe request, which is not
 * audited either).
 */
import type { FastifyPluginAsync } from 'fastify';
import { ServeError } from '@hloserve/common/errors';
import type { ControlContext } from '../api/context.js';
import type { InspectPort } from '../api/inspect-port.js';
import { mutate } from '../api/route-kit.js';
import * as S from '../api/schemas.js';

const strArray = { type: 'array', items: S.str } as const;
const intArray = { type: 'array', items: S.int } as const;
const anyObject = { type: 'object', additionalProperties: true } as const;

const tensor = S.obj({
  name: S.str,
  datatype: S.str,
  letters: S.str,
  wireLetters: S.str,
  dims: { type: 'object', additionalProperties: S.int },
  wireShape: intArray,
  wireBatchAxis: S.nullable(S.int),
});
const tensors = { type: 'array', items: tensor } as const;
const referenceSource = { type: 'string', enum: ['client-reference.json', 'reference.safetensors', 'generated'] };

const io = S.obj({
  name: S.str,
  kind: { type: 'string', enum: ['model', 'meta'] },
  description: S.nullable(S.str),
  inputs: tensors,
  outputs: tensors,
  executableInputs: tensors,
  executableOutputs: tensors,
  hooks: S.bool,
  metaCalls: strArray,
  compiledBatchSizes: intArray,
  reference: referenceSource,
  provenance: anyObject,
  warnings: strArray,
});

const histogram = S.obj({
  bounds: { type: 'array', items: S.num },
  counts: { type: 'array', items: S.num },
  sum: S.num,
  count: S.num,
});
const histograms = S.obj({
  latencySeconds: S.nullable(histogram),
  batchSizes: { type: 'object', additionalProperties: S.int },
  rowsServed: S.int,
  paddedRows: S.int,
});

const queues = S.obj({
  at: S.num,
  discipline: S.discipline,
  executing: S.int,
  models: {
    type: 'array',
    items: S.obj({
      name: S.str,
      weight: S.num,
      depth: S.int,
      rows: S.int,
      inflight: S.int,
      oldestWaitMs: S.int,
      deadlineMisses: S.int,
      requestsServed: S.int,
      computeSecondsTotal: S.num,
      recentComputeSeconds: S.num,
      contendedShare: S.num,
      weightShare: S.num,
    }),
  },
});

const version = S.obj({
  id: S.str,
  current: S.bool,
  at: S.num,
  files: S.int,
  bytes: S.num,
  manifestSha256: S.str,
  description: S.nullable(S.str),
  compiledBatchSizes: intArray,
});
const versions = { type: 'array', items: version } as const;

const previewValue = { anyOf: [S.num, S.str, S.bool] };
const tryTensor = S.obj({
  name: S.str,
  datatype: S.str,
  shape: intArray,
  preview: { type: 'array', items: previewValue },
  elements: S.int,
});
const tryResult = S.obj({
  model: S.str,
  source: referenceSource,
  inputs: { type: 'array', items: tryTensor },
  outputs: { type: 'array', items: tryTensor },
  latencyMs: S.num,
  maxAbsDiff: S.nullable(S.num),
  requestJson: S.nullable(S.str),
});

export const inspectRoutes =
  (ctx: ControlContext): FastifyPluginAsync =>
  async (app) => {
    const inspect = (): InspectPort => {
      const p = ctx.port.inspect;
      if (!p) throw new ServeError('HLO_ERR_UNSUPPORTED', 'this engine does not offer model inspection');
      return p;
    };
    const nameOf = (req: { params: unknown }) => (req.params as { name: string }).name;

    app.get(
      '/models/:name/io',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: "The serving version's tensors (named axes, wire shapes), hooks, compiled sizes, try-it source",
          params: S.modelParams,
          response: { 200: S.dataOnly(io), ...S.errorResponses },
        },
      },
      async (req) => ({ data: await inspect().io(nameOf(req)) }),
    );

    app.get(
      '/models/:name/histograms',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'Request latency histogram (seconds) and device executions per compiled batch size, since start',
          params: S.modelParams,
          response: { 200: S.dataOnly(histograms), ...S.errorResponses },
        },
      },
      async (req) => ({ data: inspect().histograms(nameOf(req)) }),
    );

    app.get(
      '/queues',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'The scheduler: discipline, per-model depth, oldest wait, deadline misses, device share vs weight',
          response: { 200: S.dataOnly(queues), ...S.errorResponses },
        },
      },
      async () => ({ data: inspect().queues() }),
    );

    app.get(
      '/models/:name/versions',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: "The model's folder in the repository and the previous versions kept beside it, newest first",
          params: S.modelParams,
          response: { 200: S.dataOnly(versions), ...S.errorResponses },
        },
      },
      async (req) => ({ data: await inspect().versions(nameOf(req)) }),
    );

    app.post(
      '/models/:name/rollback',
      {
        config: { scope: 'operator' },
        schema: {
          summary: 'Put a kept version back in place (the current one is kept in turn) and load it; audited',
          params: S.modelParams,
          body: S.obj({ version: { type: 'string', minLength: 1, maxLength: 64 } }),
          response: { 200: S.dataOnly(versions), ...S.errorResponses },
        },
      },
      async (req, reply) => {
        const name = nameOf(req);
        const { version: id } = req.body as { version: string };
        const stateOf = () => {
          const m = ctx.port.model(name);
          return m ? { state: m.state, reason: m.reason } : null;
        };
        return mutate(ctx, req, reply, {
          action: 'model.rollback',
          target: `model:${name}`,
          before: () => ({ ...stateOf(), to: id }),
          run: async () => {
            const list = await inspect().rollback(name, id);
            return { body: { data: list }, after: { ...stateOf(), from: id } };
          },
        });
      },
    );

    app.post(
      '/models/:name/try',
      {
        config: { scope: 'operator' },
        schema: {
          summary:
            "Run the bundle's reference input (or a generated one) through the engine's infer path; not audited (no state changes)",
          params: S.modelParams,
          response: { 200: S.dataOnly(tryResult), ...S.errorResponses },
        },
      },
      async (req, reply) => {
        const abort = new AbortController();
        // The caller went away before the answer: the request leaves the queue.
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) abort.abort();
        });
        return { data: await inspect().tryInfer(nameOf(req), abort.signal) };
      },
    );
  };
