/** Bearer-token authentication and scope checks for every route, from each route's `config.scope`. */
import type { FastifyInstance } from 'fastify';
import { ServeError } from '@hloserve/common/errors';
import { allows } from '../auth/scopes.js';
import type { TokenService } from '../auth/token-service.js';

export function installAuth(app: FastifyInstance, tokens: TokenService): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (req) => {
    const config = req.routeOptions.config;
    const needed = config?.scope ?? 'admin';
    if (needed === 'public' || config?.selfAuth || req.routeOptions.url === undefined) return;
    const header = req.headers.authorization;
    if (header === undefined)
      throw new ServeError('HLO_ERR_UNAUTHENTICATED', 'this route needs a token: Authorization: Bearer <token>');
    const m = /^Bearer (\S+)$/i.exec(header);
    if (m === null) throw new ServeError('HLO_ERR_UNAUTHENTICATED', 'Authorization must be "Bearer <token>"');
    const principal = await tokens.verify(m[1]!);
    if (!allows(principal.scope, needed))
      throw new ServeError(
        'HLO_ERR_PERMISSION_DENIED',
        `${req.method} ${req.routeOptions.url} needs the ${needed} scope (token has ${principal.scope})`,
      );
    req.principal = principal;
  });
}
