/** Every error the control API answers comes from the one catalogue: `{error, code}` with its HTTP status. */
import type { FastifyError, FastifyInstance } from 'fastify';
import { ServeError, toHttpStatus } from '@hloserve/common/errors';

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    let e: unknown = err;
    if (err.validation) {
      e = new ServeError(
        'HLO_ERR_INVALID_ARGUMENT',
        `${err.validationContext ?? 'request'}${err.message.replace(/^[a-z]+/, '')}`,
      );
    } else if (!(err instanceof ServeError) && typeof err.statusCode === 'number' && err.statusCode < 500) {
      // Fastify's own refusals (bad JSON, wrong content type, body too large).
      e = new ServeError(
        err.statusCode === 413 ? 'HLO_ERR_MESSAGE_TOO_LARGE' : 'HLO_ERR_INVALID_ARGUMENT',
        err.message,
      );
    }
    const { status, body } = toHttpStatus(e);
    if (status >= 500) req.log.error({ err }, 'control API error');
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: `no route ${req.method} ${req.url.split('?')[0]}`, code: 'HLO_ERR_NOT_FOUND' }),
  );
}
