/**
 * `GET /v1/sessions` and `GET /v1/sessions/{id}` (scope `sessions:read`): the token tenant's live calls,
 * from the session registry. Another tenant's session is "not found", never "forbidden": ids do not leak.
 */
import type { FastifyInstance } from 'fastify';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { PROVIDER_DIALECTS, ROOT_DIALECT } from '../dialects/index.js';
import { BridgeError } from '../errors.js';
import type { SessionInfo } from '../state/types.js';
import { principal, scopeGuard } from './guard.js';
import { BEARER, errorResponses, SESSION_ID_PARAMS } from './schemas.js';

const SESSION_SCHEMA = {
  type: 'object',
  description: 'A live call',
  properties: {
    session_id: { type: 'string' },
    customer_phone: { type: 'string' },
    direction: { type: 'string', enum: ['inbound', 'outbound'] },
    started_at: { type: 'string', format: 'date-time' },
    conferenceNumbers: { type: 'array', items: { type: 'string' } },
    dialect: {
      type: 'string',
      description: `The media stream the call came in by: ${PROVIDER_DIALECTS.map((d) => (d === ROOT_DIALECT ? `${d} (/v1/media)` : d)).join(', ')}`,
    },
    denoise: {
      type: 'boolean',
      description: "whether the caller's audio goes through the noise suppressor toward the bot",
    },
  },
  required: ['session_id', 'started_at', 'conferenceNumbers'],
} as const;

/** The contract's fields of a session (the tenant is implied by the token). */
export function sessionView(s: SessionInfo) {
  return {
    session_id: s.session_id,
    customer_phone: s.customer_phone,
    direction: s.direction,
    started_at: s.started_at,
    conferenceNumbers: s.conferenceNumbers,
    dialect: s.dialect ?? ROOT_DIALECT,
    denoise: s.denoise === true,
  };
}

export function registerSessionRoutes(app: FastifyInstance, ctx: BridgeContext, verify: RestVerifier): void {
  app.register(async (scope) => {
    const guard = scopeGuard(verify, 'sessions:read');

    scope.get(
      '/v1/sessions',
      {
        onRequest: guard,
        schema: {
          tags: ['sessions'],
          summary: "The token tenant's live sessions",
          security: BEARER,
          response: {
            // An array of Session, as the provider's own GET /sessions answers.
            200: { type: 'array', items: SESSION_SCHEMA },
            ...errorResponses(401, 403),
          },
        },
      },
      async (req) => {
        const list = await ctx.sessions.list(principal(req).tenant);
        list.sort((a, b) => (a.started_at < b.started_at ? -1 : a.started_at > b.started_at ? 1 : 0));
        return list.map(sessionView);
      },
    );

    scope.get(
      '/v1/sessions/:id',
      {
        onRequest: guard,
        schema: {
          tags: ['sessions'],
          summary: 'One live session',
          security: BEARER,
          params: SESSION_ID_PARAMS,
          response: { 200: SESSION_SCHEMA, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (req) => {
        const { id } = req.params as { id: string };
        const s = await ctx.sessions.get(principal(req).tenant, id);
        if (s === undefined) {
          throw new BridgeError(
            'not_found',
            `no live session "${id}" for this tenant: GET /v1/sessions lists them`,
          );
        }
        return sessionView(s);
      },
    );
  });
}
