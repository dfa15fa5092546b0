/** models, model detail and metric history, model actions, pin / unpin, policy. */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ServeError } from '@hloserve/common/errors';
import type { ControlContext } from '../api/context.js';
import type { ModelAction, ModelPolicyPatch, ModelView } from '../api/model-port.js';
import { mutate } from '../api/route-kit.js';
import * as S from '../api/schemas.js';

const ACTIONS: readonly ModelAction[] = ['load', 'unload', 'reload', 'drain', 'resume'];

const SUMMARIES: Readonly<Record<ModelAction, string>> = {
  load: 'Load a model from the repository (lifts a drain)',
  unload: 'Unload a model',
  reload: 'Reload a model: the new version is built beside the serving one (lifts a drain)',
  drain:
    'Drain a model: admit no new request, answer once those admitted have finished (at most 30 s; drain.idle says)',
  resume: 'Lift a drain',
};

export const modelRoutes =
  (ctx: ControlContext): FastifyPluginAsync =>
  async (app) => {
    const known = (name: string): ModelView => {
      const m = ctx.port.model(name);
      if (!m) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
      return m;
    };

    app.get(
      '/models',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'Every model: state, version, residency, policy, queue, statistics',
          response: { 200: S.envelope(S.listOf(S.model)), ...S.errorResponses },
        },
      },
      async () => ({ data: ctx.port.models(), seq: ctx.hub.topic('models').seq }),
    );

    app.get(
      '/models/:name',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'One model',
          params: S.modelParams,
          response: { 200: S.envelope(S.model), ...S.errorResponses },
        },
      },
      async (req) => ({ data: known((req.params as { name: string }).name), seq: ctx.hub.topic('models').seq }),
    );

    app.get(
      '/models/:name/metrics',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'Metric history: per second for 15 minutes (resolution=s) or per minute for a day (resolution=m)',
          params: S.modelParams,
          querystring: S.obj(
            {
              resolution: { type: 'string', enum: ['s', 'm'], default: 's' },
              sinceMs: { type: 'integer', minimum: 0 },
            },
            [],
          ),
          response: { 200: S.dataOnly(S.listOf(S.metricSample)), ...S.errorResponses },
        },
      },
      async (req) => {
        const { name } = req.params as { name: string };
        const q = req.query as { resolution: 's' | 'm'; sinceMs?: number };
        known(name);
        return { data: await ctx.history.samples(name, q.resolution, q.sinceMs ?? 0) };
      },
    );

    const actionResponse = {
      200: S.dataOnly(S.model),
      202: S.dataOnly(S.obj({ model: S.str, state: S.str })),
      ...S.errorResponses,
    };
    for (const action of ACTIONS) {
      app.post(
        `/models/:name/${action}`,
        {
          config: { scope: 'operator' },
          schema: {
            summary: `${SUMMARIES[action]} (audited; send an Idempotency-Key to retry safely)`,
            params: S.modelParams,
            response: actionResponse,
          },
        },
        async (req, reply) => {
          const { name } = req.params as { name: string };
          return mutate<unknown>(ctx, req, reply, {
            action: `model.${action}`,
            target: `model:${name}`,
            before: () => stateOf(ctx.port.model(name)),
            run: async () => {
              await ctx.port.act(name, action);
              const after = ctx.port.model(name);
              return after
                ? { body: { data: after }, after: stateOf(after) }
                : { status: 202, body: { data: { model: name, state: 'UNLOADED' } }, after: null };
            },
          });
        },
      );
    }

    const policyChange = (req: FastifyRequest, reply: FastifyReply, action: string, patch: ModelPolicyPatch) => {
      const { name } = req.params as { name: string };
      return mutate(ctx, req, reply, {
        action,
        target: `model:${name}`,
        before: () => ctx.port.model(name)?.policy ?? null,
        run: async () => {
          known(name);
          const policy = await ctx.desired.setPolicy(name, patch, req.principal!.actor);
          return { body: { data: known(name) }, after: policy };
        },
      });
    };
    const policyResponse = { 200: S.dataOnly(S.model), ...S.errorResponses };

    app.post(
      '/models/:name/pin',
      {
        config: { scope: 'operator' },
        schema: {
          summary: "Pin a model's weights in host memory (system) or on the device (device); persisted",
          params: S.modelParams,
          body: S.pinBody,
          response: policyResponse,
        },
      },
      (req, reply) =>
        policyChange(req, reply, 'model.pin', {
          residency: (req.body as { residency: 'system' | 'device' }).residency,
        }),
    );

    app.post(
      '/models/:name/unpin',
      {
        config: { scope: 'operator' },
        schema: {
          summary: "Make a model's weights evictable again; persisted",
          params: S.modelParams,
          response: policyResponse,
        },
      },
      (req, reply) => policyChange(req, reply, 'model.unpin', { residency: 'unpinned' }),
    );

    app.patch(
      '/models/:name/policy',
      {
        config: { scope: 'operator' },
        schema: {
          summary: 'Change residency, weight, max batch size or batching window; persisted, wins over node.yaml',
          params: S.modelParams,
          body: S.policyPatch,
          response: policyResponse,
        },
      },
      (req, reply) => policyChange(req, reply, 'model.policy', req.body as ModelPolicyPatch),
    );
  };

const stateOf = (m: ModelView | undefined) =>
  m ? { state: m.state, version: m.version, draining: m.drain !== null } : null;
