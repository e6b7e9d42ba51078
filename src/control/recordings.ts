/**
 * Call recordings (src/recording/): `GET /v1/recordings?session_id=` and `GET /v1/recordings/{id}`
 * (scope `recordings:read`), `DELETE /v1/recordings/{id}` (`recordings:manage`). Another tenant's
 * recording is "not found", as if absent.
 *
 * The download is the WAV file as written, with single byte ranges (`Range: bytes=a-b`) so a browser's
 * <audio> element can seek. The token may come as `?token=` where a client cannot set a header (an
 * <audio src>). A recording still being written is listed (`in_progress: true`, its duration so far)
 * but cannot be downloaded or deleted until its call ends (409): until then its header holds no sizes.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { BridgeError } from '../errors.js';
import type { RecordingMeta } from '../recording/index.js';
import { scopeGuardOrQuery as guard, principal } from './guard.js';
import { BEARER, errorResponses } from './schemas.js';
import { useUniformValidation } from './validation.js';

const RECORDING_SCHEMA = {
  type: 'object',
  description: 'A call recording: a stereo WAV, the caller left and the bot right, at the caller rate',
  properties: {
    recording_id: { type: 'string' },
    session_id: { type: 'string' },
    started_at: { type: 'string', format: 'date-time' },
    duration_ms: { type: 'integer', description: 'the audio in the file' },
    bytes: { type: 'integer', description: 'the file size, header included' },
    sample_rate: { type: 'integer' },
    channels: { type: 'integer', enum: [2] },
    in_progress: { type: 'boolean', description: 'the call is still being recorded' },
    failed: {
      type: 'string',
      description:
        "present when the disk stopped the recording early: the system's error code (ENOSPC, EIO, ...)",
    },
  },
  required: ['recording_id', 'session_id', 'started_at', 'duration_ms', 'bytes', 'sample_rate', 'channels'],
} as const;

const ID_PARAMS = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 128, description: 'a recording_id' } },
  required: ['id'],
} as const;

const TOKEN_QUERY = {
  token: { type: 'string', maxLength: 8192, description: 'the REST token, where no header can be set' },
} as const;

function view(m: RecordingMeta) {
  return {
    recording_id: m.recording_id,
    session_id: m.session_id,
    started_at: m.started_at,
    duration_ms: m.duration_ms,
    bytes: m.bytes,
    sample_rate: m.sample_rate,
    channels: m.channels,
    in_progress: m.in_progress,
    ...(m.failed === undefined ? {} : { failed: m.failed }),
  };
}

const notFound = (id: string) =>
  new BridgeError('not_found', `no recording "${id}" for this tenant: GET /v1/recordings lists them`);

const inProgress = (id: string) =>
  new BridgeError(
    'conflict',
    `recording "${id}" is still being written: it can be downloaded or deleted once its call ends`,
  );

/**
 * One byte range of a file of `size` bytes from a Range header, inclusive; undefined for the whole
 * file (no header, or one this server does not take, such as several ranges); 'unsatisfiable' past the end.
 */
export function byteRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  const m = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null) return undefined;
  const [, a, b] = m;
  if (a === '' && b === '') return undefined;
  if (a === '') {
    const n = Number(b);
    if (n === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(a);
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

export function registerRecordingRoutes(
  app: FastifyInstance,
  ctx: BridgeContext,
  verify: RestVerifier,
): void {
  const recordings = ctx.recordings;
  app.register(async (scope) => {
    useUniformValidation(scope);
    const read = guard(verify, 'recordings:read');

    scope.get(
      '/v1/recordings',
      {
        onRequest: read,
        schema: {
          tags: ['recordings'],
          summary: "The token tenant's call recordings, newest first",
          security: BEARER,
          querystring: {
            type: 'object',
            properties: {
              session_id: { type: 'string', minLength: 1, maxLength: 128, description: 'a session id' },
              ...TOKEN_QUERY,
            },
          },
          response: { 200: { type: 'array', items: RECORDING_SCHEMA }, ...errorResponses(400, 401, 403) },
        },
      },
      async (req) => {
        const { session_id } = req.query as { session_id?: string };
        return (await recordings.list(principal(req).tenant, session_id)).map(view);
      },
    );

    scope.get(
      '/v1/recordings/:id',
      {
        onRequest: read,
        schema: {
          tags: ['recordings'],
          summary: 'One recording: audio/wav, stereo PCM16 (caller left, bot right); single byte ranges',
          security: BEARER,
          params: ID_PARAMS,
          querystring: { type: 'object', properties: TOKEN_QUERY },
          response: errorResponses(400, 401, 403, 404, 409, 416),
        },
      },
      async (req, reply) => {
        const { id } = req.params as { id: string };
        const { tenant } = principal(req);
        const meta = await recordings.get(tenant, id);
        if (meta === undefined) throw notFound(id);
        if (meta.in_progress) throw inProgress(id);
        const path = recordings.store.wavPath(tenant, id);
        const size = await stat(path).then(
          (s) => s.size,
          () => undefined,
        );
        if (size === undefined) throw notFound(id);
        reply
          .header('content-type', 'audio/wav')
          .header('accept-ranges', 'bytes')
          .header('content-disposition', `inline; filename="${id}.wav"`)
          .header('cache-control', 'private, no-store');
        const range = byteRange(req.headers.range, size);
        if (range === 'unsatisfiable') {
          reply.header('content-range', `bytes */${size}`);
          throw new BridgeError(
            'range_not_satisfiable',
            `Range must name bytes within the file's ${size}, got ${JSON.stringify(req.headers.range)}`,
          );
        }
        if (range === undefined) {
          reply.header('content-length', size);
          return reply.send(createReadStream(path));
        }
        reply
          .code(206)
          .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
          .header('content-length', range.end - range.start + 1);
        return reply.send(createReadStream(path, { start: range.start, end: range.end }));
      },
    );

    scope.delete(
      '/v1/recordings/:id',
      {
        onRequest: guard(verify, 'recordings:manage'),
        schema: {
          tags: ['recordings'],
          summary: 'Deletes a recording (its file and metadata)',
          security: BEARER,
          params: ID_PARAMS,
          querystring: { type: 'object', properties: TOKEN_QUERY },
          response: { 204: { type: 'null', description: 'deleted' }, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (req, reply) => {
        const { id } = req.params as { id: string };
        const { tenant } = principal(req);
        const meta = await recordings.get(tenant, id);
        if (meta === undefined) throw notFound(id);
        if (meta.in_progress) throw inProgress(id);
        await recordings.store.remove(tenant, id);
        req.log.info({ recording_id: id, tenant }, 'recording deleted');
        return reply.code(204).send();
      },
    );
  });
}
