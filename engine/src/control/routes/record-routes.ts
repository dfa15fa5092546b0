/** events (lifecycle), audit, tokens. */
import type { FastifyPluginAsync } from 'fastify';
import type { AuditRow } from '../../state/store.js';
import type { ControlContext } from '../api/context.js';
import { mutate } from '../api/route-kit.js';
import * as S from '../api/schemas.js';
import type { Scope } from '../auth/scopes.js';
import { tokenView } from './system-routes.js';

const parse = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

export const auditView = (r: AuditRow) => ({
  seq: r.seq,
  at: r.at,
  actor: r.actor,
  action: r.action,
  target: r.target,
  before: parse(r.before),
  after: parse(r.after),
  result: r.result,
  requestId: r.requestId,
  idempotencyKey: r.idempotencyKey,
});

export const recordRoutes =
  (ctx: ControlContext): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/events',
      {
        config: { scope: 'viewer' },
        schema: {
          summary: 'Lifecycle events, oldest first after a seq',
          querystring: S.obj(
            {
              afterSeq: { type: 'integer', minimum: 0 },
              limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
              model: S.str,
            },
            [],
          ),
          response: { 200: S.envelope(S.listOf(S.eventRecord)), ...S.errorResponses },
        },
      },
      async (req) => {
        const q = req.query as { afterSeq?: number; limit: number; model?: string };
        await ctx.events.flushed();
        const rows = await ctx.store.listEvents(q);
        return {
          data: rows.map((r) => ({ ...r, data: JSON.parse(r.data) as object })),
          seq: ctx.hub.topic('events').seq,
        };
      },
    );

    app.get(
      '/audit',
      {
        config: { scope: 'operator' },
        schema: {
          summary: 'The audit log, newest first (page with beforeSeq)',
          querystring: S.obj(
            {
              beforeSeq: { type: 'integer', minimum: 1 },
              limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
              target: S.str,
            },
            [],
          ),
          response: { 200: S.dataOnly(S.listOf(S.auditRecord)), ...S.errorResponses },
        },
      },
      async (req) => ({ data: (await ctx.store.listAudit(req.query as { limit: number })).map(auditView) }),
    );

    app.get(
      '/tokens',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Tokens (never their secret)',
          response: { 200: S.dataOnly(S.listOf(S.token)), ...S.errorResponses },
        },
      },
      async () => ({ data: (await ctx.store.listTokens()).map(tokenView) }),
    );

    app.post(
      '/tokens',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Mint a token; its text is in this answer only',
          body: S.tokenCreate,
          response: { 201: S.dataOnly(S.obj({ token: S.str, tokenInfo: S.token })), ...S.errorResponses },
        },
      },
      async (req, reply) => {
        const b = req.body as { name: string; scope: Scope; ttlSeconds?: number };
        return mutate(ctx, req, reply, {
          action: 'token.create',
          target: `token:${b.name}`,
          run: async () => {
            const m = await ctx.tokens.mint({ ...b, createdBy: req.principal!.actor });
            return {
              status: 201,
              body: { data: { token: m.token, tokenInfo: tokenView(m.row) } },
              after: tokenView(m.row),
            };
          },
        });
      },
    );

    app.delete(
      '/tokens/:id',
      {
        config: { scope: 'admin' },
        schema: {
          summary: 'Revoke a token (it stays listed, with revokedAt)',
          params: S.obj({ id: { type: 'string', pattern: '^[0-9a-f]{12}$' } }),
          response: { 200: S.dataOnly(S.token), ...S.errorResponses },
        },
      },
      async (req, reply) => {
        const { id } = req.params as { id: string };
        return mutate(ctx, req, reply, {
          action: 'token.revoke',
          target: `token:${id}`,
          run: async () => {
            const row = tokenView(await ctx.tokens.revoke(id));
            return { body: { data: row }, after: row };
          },
        });
      },
    );
  };
