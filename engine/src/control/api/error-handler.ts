/** Every error the control API answers comes from the one catalogue: `{error, code}` with its HTTP status. */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServeError, toHttpStatus } from '@hloserve/common/errors';

/** A handler's error, or Fastify's own refusal, as the catalogue error it answers. */
function catalogueError(err: FastifyError): unknown {
  if (err.validation) {
    return new ServeError(
      'HLO_ERR_INVALID_ARGUMENT',
      `${err.validationContext ?? 'request'}${err.message.replace(/^[a-z]+/, '')}`,
    );
  }
  if (!(err instanceof ServeError) && typeof err.statusCode === 'number' && err.statusCode < 500) {
    // Fastify's own refusals (bad JSON, wrong content type, body too large; from the router, a
    // path segment past maxParamLength or a bad percent-encoding).
    return new ServeError(
      err.statusCode === 413 ? 'HLO_ERR_MESSAGE_TOO_LARGE' : 'HLO_ERR_INVALID_ARGUMENT',
      err.message,
    );
  }
  return err;
}

/** Answers `err` as the catalogue says; the control app's error handler and its router's (frameworkErrors). */
export function sendControlError(err: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, body } = toHttpStatus(catalogueError(err));
  if (status >= 500) req.log.error({ err }, 'control API error');
  return reply.code(status).send(body);
}

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(sendControlError);
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: `no route ${req.method} ${req.url.split('?')[0]}`, code: 'HLO_ERR_NOT_FOUND' }),
  );
}
