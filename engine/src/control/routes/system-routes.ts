/** health, setup (the one-time token exchange), session, workers, settings. */
import type { FastifyPluginAsync } from 'fastify';
import type { Discipline } from '../../config/types.js';
import type { ControlContext } from '../api/context.js';
import { mutate } from '../api/route-kit.js';
import * as S from '../api/schemas.js';

export const systemRoutes =
  (ctx: ControlContext): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/health',
      {
        config: { scope: 'public' },
        schema: {
          summary: 'Liveness of the worker behind this console (no token needed)',
          response: { 200: S.obj({ live: S.bool, ready: S.bool }) },
        },
      },
      async () => ({ live: true, ready: ctx.port.worker().ready }),
    );

    app.post(
      '/setup',
      {
        config: { scope: 'public' },
        schema: {
          summary: 'Exchange the one-time setup token (printed at first start) for the first admin token',
          body: S.obj(
            { setupToken: { type: 'string', maxLength: 200 }, name: { type: 'string', minLength: 1, maxLength: 100 } },
            ['setupToken'],
          ),
          response: { 201: S.dataOnly(S.obj({ token: S.str, tokenInfo: S.token })), ...S.errorResponses },
        },
      },
      async (req, reply) => {
        const body = req.body as { setupToken: string; name?: string };
        const minted = await ctx.tokens.exchangeSetupToken(
          body.setupToken,
          ctx.options.setupTokenFile,
          body.name ?? 'admin',
        );
        // The exchange is the only mutation without a token: its actor is the setup token itself.
        req.principal = { actor: 'setup', tokenId: null, name: 'setup', scope: 'admin' };
        return mutate(ctx, req, reply, {
          action: 'auth.setup',
          target: `token:${minted.row.id}`,
          run: async () => ({
            status: 201,
            body: { data: { token: minted.token, tokenInfo: tokenView(minted.row) } },
            after: tokenView(minted.row),
          }),
        });
      },
    );

    app.get(
      '/session',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'Who the presented token is',
          response: {
            200: S.dataOnly(S.obj({ actor: S.str, tokenId: S.nullable(S.str), name: S.str, scope: S.scope })),
            ...S.errorResponses,
          },
        },
      },
      async (req) => ({ data: req.principal! }),
    );

    app.get(
      '/workers',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'Workers and their devices, with memory (total, budget, resident, pinned, arena, free)',
          response: { 200: S.envelope(S.listOf(S.worker)), ...S.errorResponses },
        },
      },
      async () => ({ data: [ctx.port.worker()], seq: ctx.hub.topic('residency').seq }),
    );

    app.get(
      '/settings',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: "Node settings the API can see or change, and the state store's health",
          response: { 200: S.dataOnly(S.settingsWithStore), ...S.errorResponses },
        },
      },
      async () => ({ data: { ...settingsView(ctx), store: await ctx.store.health() } }),
    );

    app.patch(
      '/settings',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Change settings (persisted; they win over node.yaml at the next start)',
          body: S.settingsPatch,
          response: { 200: S.dataOnly(S.settingsView), ...S.errorResponses },
        },
      },
      async (req, reply) => {
        const patch = req.body as { discipline?: Discipline; weightBudgetBytes?: number };
        return mutate(ctx, req, reply, {
          action: 'settings.update',
          target: 'settings',
          before: () => settingsView(ctx),
          run: async () => {
            if (patch.discipline) await ctx.desired.setDiscipline(patch.discipline, req.principal!.actor);
            if (patch.weightBudgetBytes !== undefined)
              await ctx.desired.setWeightBudget(patch.weightBudgetBytes, req.principal!.actor);
            const after = settingsView(ctx);
            return { body: { data: after }, after };
          },
        });
      },
    );
  };

export const tokenView = (t: {
  id: string;
  name: string;
  scope: string;
  createdAt: number;
  createdBy: string;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}) => ({
  id: t.id,
  name: t.name,
  scope: t.scope,
  createdAt: t.createdAt,
  createdBy: t.createdBy,
  expiresAt: t.expiresAt,
  revokedAt: t.revokedAt,
  lastUsedAt: t.lastUsedAt,
});

function settingsView(ctx: ControlContext) {
  const w = ctx.port.worker();
  return {
    discipline: w.discipline,
    modelControlMode: w.modelControlMode,
    stateStore: ctx.store.dialect,
    tls: tlsView(ctx),
    feed: { metricsIntervalMs: 1000, heartbeatMs: ctx.options.feed.heartbeatMs },
    weightBudgetBytes: w.devices[0]?.budgetBytes ?? null,
  };
}

/** What the console's own listener serves (every listener of the worker shares `endpoints.tls`). */
function tlsView(ctx: ControlContext) {
  const t = ctx.options.tls;
  if (!t) return { enabled: false, certFile: null, subject: null, validTo: null, clientCertificates: false };
  return {
    enabled: true,
    certFile: t.config.certFile,
    subject: t.subject,
    validTo: t.validTo,
    clientCertificates: t.clientCa !== null,
  };
}
