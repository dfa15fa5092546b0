import type { FastifyInstance } from 'fastify';
import { closeIdleUntilClosed } from '@hloserve/common/idle-connections';

/**
 * Once `app` begins to close, its keep-alive connections are closed as each goes idle
 * (closeIdleUntilClosed): a request in flight at a graceful stop is answered, and its connection
 * then no longer holds the close until the keep-alive timeout.
 */
export function closeIdleWhenClosing(app: FastifyInstance): void {
  app.addHook('preClose', (done) => {
    if (app.server.listening) closeIdleUntilClosed(app.server);
    done();
  });
}
