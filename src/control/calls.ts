/**
 * Call control (scope `calls:control`): `POST /v1/sessions/{id}/consult` and `/conference`, forwarded to
 * the provider for sessions this bridge holds. The provider's ConsultResult and ConferenceResult pass
 * through unchanged; its 400/404/409 pass through with their messages.
 *
 * A consult blocks until the second party answers, the dial fails or the provider's 20 s + 5 s run out;
 * the provider client's bound (>= 30 s) and the server's request timeout (above it) leave room for that.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { ROOT_DIALECT } from '../dialects/index.js';
import { BridgeError, invalidField, isBridgeError } from '../errors.js';
import type { ProviderClient } from '../provider/client.js';
import type { ConferenceRequest, ConsultRequest } from '../provider/types.js';
import type { SessionInfo } from '../state/types.js';
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

function providerOf(ctx: BridgeContext): ProviderClient {
  if (ctx.provider === undefined) {
    throw new BridgeError(
      'upstream_unavailable',
      'no provider is configured for call control: set PROVIDER_BASE_URL (and PROVIDER_TOKEN)',
    );
  }
  return ctx.provider;
}

async function heldSession(ctx: BridgeContext, req: FastifyRequest): Promise<SessionInfo> {
  const { tenant } = principal(req);
  const { id } = req.params as { id: string };
  const session = await ctx.sessions.get(tenant, id);
  if (session === undefined) {
    throw new BridgeError('not_found', `session "${id}" is not live on this bridge for tenant "${tenant}"`);
  }
  // Consult and conference are the voice API provider's own call control: a call that came in by another
  // platform's media stream is not one of its calls.
  if (session.dialect !== undefined && session.dialect !== ROOT_DIALECT) {
    throw new BridgeError(
      'unsupported_for_dialect',
      `session "${id}" came in through the ${session.dialect} media stream; consult and conference are for calls of the voice API provider (dialect ${ROOT_DIALECT}) only`,
    );
  }
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
      async (req) => {
        const session = await heldSession(ctx, req);
        const provider = providerOf(ctx);
        const body = req.body as ConsultRequest;
        const result = await provider
          .consult(session.session_id, body)
          .catch(logFailure(req, session.session_id, 'consult'));
        req.log.info(
          { session_id: session.session_id, status: result.status, dialStatus: result.dialStatus },
          'consult finished',
        );
        return result;
      },
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
        const session = await heldSession(ctx, req);
        const provider = providerOf(ctx);
        const result = await provider
          .conference(session.session_id, body)
          .catch(logFailure(req, session.session_id, 'conference'));
        await syncConferenceNumbers(ctx, session, body, result.status);
        req.log.info(
          { session_id: session.session_id, action: body.action, status: result.status },
          'conference changed',
        );
        return result;
      },
    );
  });
}

/**
 * Logs a failed provider call with the session it was for (the provider client's own line names the
 * call, not the session), then rethrows: upstream faults at warn, the provider's own refusals at info.
 */
function logFailure(req: FastifyRequest, sessionId: string, call: string) {
  return (err: unknown): never => {
    const code = isBridgeError(err) ? err.code : 'internal';
    req.log[code.startsWith('upstream_') || code === 'internal' ? 'warn' : 'info'](
      { session_id: sessionId, call, code },
      'call control failed',
    );
    throw err;
  };
}

/** Keeps the session's `conferenceNumbers` in step with what the provider just did. */
async function syncConferenceNumbers(
  ctx: BridgeContext,
  session: SessionInfo,
  body: ConferenceRequest,
  status: string,
): Promise<void> {
  // Re-read: another request may have changed the list while the provider was dialling.
  const now = (await ctx.sessions.get(session.tenant, session.session_id)) ?? session;
  const numbers = now.conferenceNumbers.filter((n) => n !== body.number);
  if (body.action === 'add' && status === 'answered') numbers.push(body.number);
  await ctx.sessions.setConferenceNumbers(session.tenant, session.session_id, numbers);
  ctx.callEvents.updated(session.tenant, session.session_id, numbers);
}
