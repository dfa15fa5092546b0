/**
 * Resumable bundle uploads: POST /uploads creates one, PATCH /uploads/:id sends a chunk
 * (`Upload-Offset` header, body `application/offset+octet-stream`), HEAD or GET /uploads/:id tells
 * where it stands (to resume), POST /uploads/:id/complete validates and installs, DELETE cancels.
 * Create, complete and cancel are audited; chunks are data transfer and are not.
 */
import type { FastifyPluginAsync } from 'fastify';
import { ServeError } from '@hloserve/common/errors';
import type { UploadRow } from '../../state/store.js';
import type { ControlContext } from '../api/context.js';
import { mutate } from '../api/route-kit.js';
import * as S from '../api/schemas.js';
import { allows } from '../auth/scopes.js';

export const CHUNK_CONTENT_TYPE = 'application/offset+octet-stream';
const MAX_CHUNK_BYTES = 64 * 1024 * 1024;

const view = (r: UploadRow) => ({
  id: r.id,
  filename: r.filename,
  model: r.model,
  sizeBytes: r.sizeBytes,
  offsetBytes: r.offsetBytes,
  sha256: r.sha256,
  state: r.state,
  error: r.error,
  createdAt: r.createdAt,
  createdBy: r.createdBy,
  updatedAt: r.updatedAt,
});

const uploadSchema = S.obj({
  id: S.str,
  filename: S.str,
  model: S.str,
  sizeBytes: S.int,
  offsetBytes: S.int,
  sha256: S.nullable(S.str),
  state: { type: 'string', enum: ['receiving', 'validating', 'compiling', 'installed', 'rejected', 'cancelled'] },
  error: S.nullable(S.str),
  createdAt: S.int,
  createdBy: S.str,
  updatedAt: S.int,
});
const idParams = S.obj({ id: { type: 'string', pattern: '^[0-9a-f]{16}$' } });
const one = { 200: S.dataOnly(uploadSchema), ...S.errorResponses, 413: S.errorBody };

export const uploadRoutes =
  (ctx: ControlContext): FastifyPluginAsync =>
  async (app) => {
    const svc = () => {
      if (ctx.uploads === null) throw new ServeError('HLO_ERR_UNSUPPORTED', 'uploads are not configured on this node');
      return ctx.uploads;
    };
    app.addContentTypeParser(
      CHUNK_CONTENT_TYPE,
      { parseAs: 'buffer', bodyLimit: MAX_CHUNK_BYTES },
      (_req, body, done) => done(null, body),
    );

    app.post(
      '/uploads',
      {
        config: { scope: 'operator' },
        schema: {
          summary: 'Start a resumable upload of a bundle archive (.tar, .tar.gz, .tgz, .zip)',
          body: S.obj(
            {
              filename: { type: 'string', minLength: 1, maxLength: 255 },
              model: { type: 'string', minLength: 1, maxLength: 200 },
              sizeBytes: { type: 'integer', minimum: 1 },
              sha256: { type: 'string', pattern: '^[0-9a-fA-F]{64}$' },
            },
            ['filename', 'model', 'sizeBytes'],
          ),
          response: { 201: S.dataOnly(uploadSchema), ...S.errorResponses, 413: S.errorBody },
        },
      },
      async (req, reply) => {
        const b = req.body as { filename: string; model: string; sizeBytes: number; sha256?: string };
        return mutate(ctx, req, reply, {
          action: 'upload.create',
          target: `model:${b.model}`,
          run: async () => {
            const row = view(await svc().create({ ...b, by: req.principal!.actor }));
            return { status: 201, body: { data: row }, after: row };
          },
        });
      },
    );

    app.get(
      '/uploads',
      {
        config: { scope: 'operator' },
        schema: {
          summary: 'Recent uploads',
          response: { 200: S.dataOnly(S.listOf(uploadSchema)), ...S.errorResponses },
        },
      },
      async () => ({ data: (await ctx.store.listUploads(100)).map(view) }),
    );

    app.get(
      '/uploads/:id',
      {
        config: { scope: 'operator' },
        schema: { summary: 'One upload: its offset (to resume from) and state', params: idParams, response: one },
      },
      async (req, reply) => {
        const row = await svc().get((req.params as { id: string }).id);
        reply.header('upload-offset', String(row.offsetBytes));
        return { data: view(row) };
      },
    );

    app.patch(
      '/uploads/:id',
      {
        config: { scope: 'operator' },
        bodyLimit: MAX_CHUNK_BYTES,
        schema: {
          summary: `Send a chunk: header Upload-Offset (where it starts), body ${CHUNK_CONTENT_TYPE}`,
          params: idParams,
          headers: {
            type: 'object',
            properties: { 'upload-offset': { type: 'integer', minimum: 0 } },
            required: ['upload-offset'],
          },
          response: one,
        },
      },
      async (req, reply) => {
        if (req.headers['content-type'] !== CHUNK_CONTENT_TYPE || !Buffer.isBuffer(req.body))
          throw new ServeError('HLO_ERR_INVALID_ARGUMENT', `content-type must be ${CHUNK_CONTENT_TYPE}`);
        const offset = Number(req.headers['upload-offset']);
        const row = await svc().append((req.params as { id: string }).id, offset, req.body);
        // Progress on the live feed's events topic: each tenth of the upload, not every chunk.
        const tenth = (n: number) => Math.floor((n * 10) / row.sizeBytes);
        if (tenth(row.offsetBytes) > tenth(offset))
          void ctx.events.record({
            at: Date.now(),
            kind: 'upload.progress',
            model: row.model,
            data: { upload: row.id, offsetBytes: row.offsetBytes, sizeBytes: row.sizeBytes },
          });
        reply.header('upload-offset', String(row.offsetBytes));
        return { data: view(row) };
      },
    );

    app.post(
      '/uploads/:id/complete',
      {
        config: { scope: 'operator' },
        schema: {
          summary:
            'Validate the archive and the bundle, then install it into the model repository (and load it where the mode allows)',
          params: idParams,
          body: { anyOf: [S.obj({ load: S.bool }, []), { type: 'null' }] },
          response: one,
        },
      },
      async (req, reply) => {
        const { id } = req.params as { id: string };
        const load = (req.body as { load?: boolean } | null)?.load ?? true;
        const row0 = await svc().get(id);
        return mutate(ctx, req, reply, {
          action: 'upload.complete',
          target: `model:${row0.model}`,
          before: () => ({ upload: id, model: ctx.port.model(row0.model)?.state ?? null }),
          run: async () => {
            void ctx.events.record({
              at: Date.now(),
              kind: 'upload.validating',
              model: row0.model,
              data: { upload: id },
            });
            const row = await svc().complete(id, { allowHooks: allows(req.principal!.scope, 'admin') });
            void ctx.events.record({
              at: Date.now(),
              kind: 'upload.installed',
              model: row.model,
              data: { upload: id, sha256: row.sha256 },
            });
            if (load && ctx.port.worker().modelControlMode !== 'static') await ctx.port.act(row.model, 'load');
            return {
              body: { data: view(row) },
              after: { upload: id, sha256: row.sha256, model: ctx.port.model(row.model)?.state ?? 'installed' },
            };
          },
        });
      },
    );

    app.delete(
      '/uploads/:id',
      {
        config: { scope: 'operator' },
        schema: { summary: 'Cancel an upload in progress', params: idParams, response: one },
      },
      async (req, reply) => {
        const { id } = req.params as { id: string };
        return mutate(ctx, req, reply, {
          action: 'upload.cancel',
          target: `upload:${id}`,
          run: async () => {
            const row = view(await svc().cancel(id));
            return { body: { data: row }, after: row };
          },
        });
      },
    );
  };
