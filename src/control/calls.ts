/**
 * Call control (scope `calls:control`): `POST /v1/sessions/{id}/consult` and `/conference`, forwarded to
 * the provider for sessions this bridge holds. The provider's ConsultResult and ConferenceResult pass
 * through unchanged; its 400/404/409 pass through with their messages.
 *
 * A consult blocks until the second party answers, the dial fails or the provider's 20 s + 5 s run out;
 * the provider client's bound (>= 30 s) and the server's request timeout (above it) leave room for that.
 * What the routes do for a session is call-control.ts's, which the model's tools call too.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { BridgeError, invalidField } from '../errors.js';
import type { ConferenceRequest, ConsultRequest } from '../provider/types.js';
import type { SessionInfo } from '../state/types.js';
import { checkVoiceApiCall, conferenceCall, consultCall } from './call-control.js';
import { principal, scopeGuard } from './guard.js';
import { BARE_NUMBER, BEARER, errorResponses, SESSION_ID_PARAMS } from './schemas.js';
import { rejectUnknownFields, useUniformValidation } from './validation.js';

const CONSULT_BODY = {
  type: 'object',
  properties: {
    calledParty: { ...BARE_NUMBER, description: `${BARE_NUMBER.description} (the second party)` },
    callerId: { ...BARE_NUMBER, description: `${BARE_NUMBER.description} (the caller ID to present)` },
  },
  required: ['calledParty'],
} as const;

const CONSULT_RESULT = {
  type: 'object',
  properties: {
    sessionId: { type: 'string' },
    consultId: { type: 'string', description: 'consult-<sessionId>' },
    status: { type: 'string', enum: ['answered', 'failed', 'timeout'] },
    dialStatus: { type: 'string', enum: ['ANSWER', 'NOANSWER', 'BUSY', 'CONGESTION', 'CHANUNAVAIL'] },
    cause: { type: 'integer', description: 'Q.850 cause; only when status is failed' },
    causeText: { type: 'string', description: 'only when status is failed' },
  },
} as const;

const CONFERENCE_BODY = {
  type: 'object',
  properties: {
    action: { type: 'string', enum: ['add', 'delete'], description: '"add" or "delete"' },
    number: BARE_NUMBER,
    callerId: { ...BARE_NUMBER, description: `${BARE_NUMBER.description}, on add only` },
  },
  required: ['action', 'number'],
} as const;

const CONFERENCE_RESULT = {
  type: 'object',
  properties: {
    sessionId: { type: 'string' },
    number: { type: 'string' },
    channelId: { type: 'string', description: 'conf-<sessionId>-<number>' },
    status: { type: 'string', enum: ['answered', 'failed', 'timeout'] },
    dialStatus: { type: 'string', enum: ['ANSWER', 'NOANSWER', 'BUSY', 'CONGESTION', 'CHANUNAVAIL'] },
  },
} as const;

async function heldSession(ctx: BridgeContext, req: FastifyRequest): Promise<SessionInfo> {
  const { tenant } = principal(req);
  const { id } = req.params as { id: string };
  const session = await ctx.sessions.get(tenant, id);
  if (session === undefined) {
    throw new BridgeError('not_found', `session "${id}" is not live on this bridge for tenant "${tenant}"`);
  }
  checkVoiceApiCall(session);
  return session;
}

export function registerCallRoutes(app: FastifyInstance, ctx: BridgeContext, verify: RestVerifier): void {
  app.register(async (scope) => {
    useUniformValidation(scope);
    const guard = scopeGuard(verify, 'calls:control');

    scope.post(
      '/v1/sessions/:id/consult',
      {
        onRequest: guard,
        preValidation: rejectUnknownFields(Object.keys(CONSULT_BODY.properties)),
        schema: {
          tags: ['call control'],
          summary:
            'Put the caller on hold and dial a second party; blocks until answered, failed or timed out',
          security: BEARER,
          params: SESSION_ID_PARAMS,
          body: CONSULT_BODY,
          response: { 200: CONSULT_RESULT, ...errorResponses(400, 401, 403, 404, 409, 502, 503, 504) },
        },
      },
      async (req) => consultCall(ctx, await heldSession(ctx, req), req.body as ConsultRequest, req.log),
    );

    scope.post(
      '/v1/sessions/:id/conference',
      {
        onRequest: guard,
        preValidation: rejectUnknownFields(Object.keys(CONFERENCE_BODY.properties)),
        schema: {
          tags: ['call control'],
          summary: 'Add a party to, or remove one from, the live call',
          security: BEARER,
          params: SESSION_ID_PARAMS,
          body: CONFERENCE_BODY,
          response: { 200: CONFERENCE_RESULT, ...errorResponses(400, 401, 403, 404, 409, 502, 503, 504) },
        },
      },
      async (req) => {
        const body = req.body as ConferenceRequest;
        if (body.action === 'delete' && body.callerId !== undefined) {
          throw invalidField('callerId', 'left out on delete (it is for add only)', body.callerId);
        }
        return conferenceCall(ctx, await heldSession(ctx, req), body, req.log);
      },
    );
  });
}
