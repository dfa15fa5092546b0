import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal, Scope } from '../auth/scopes.js';
import type { Mutation } from '../audit/audited-mutation.js';
import type { ControlContext } from './context.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Who may call the route: 'public', or the least scope a token needs. Absent: admin. */
    scope?: Scope | 'public';
    /** The route authenticates by itself (the live feed: subprotocol or first message). */
    selfAuth?: boolean;
  }
}

/** Runs a mutation through the audit (once per request, replayed for a reused Idempotency-Key). */
export async function mutate<T>(
  ctx: ControlContext,
  req: FastifyRequest,
  reply: FastifyReply,
  m: Mutation<T>,
): Promise<FastifyReply> {
  const key = req.headers['idempotency-key'];
  const answer = await ctx.mutations.run(
    { principal: req.principal!, requestId: req.id, idempotencyKey: typeof key === 'string' ? key : null },
    m,
  );
  if (answer.replayed) reply.header('idempotent-replay', 'true');
  return reply.code(answer.status).send(answer.body);
}
