/**
 * Call control of one live call, as the REST routes (calls.ts) and the model's tools (src/tools/) both
 * do it: consult and conference forwarded to the provider's voice API for a call of the default
 * dialect, the session's `conferenceNumbers` kept in step, each failure logged with the session it was
 * for. The provider's ConsultResult and ConferenceResult pass through unchanged; its 400/404/409 come
 * back as BridgeErrors with its message.
 */
import type { BridgeContext } from '../context.js';
import { ROOT_DIALECT } from '../dialects/index.js';
import { BridgeError, isBridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProviderClient } from '../provider/client.js';
import type {
  ConferenceRequest,
  ConferenceResult,
  ConsultRequest,
  ConsultResult,
} from '../provider/types.js';
import type { SessionInfo } from '../state/types.js';

/** The log a call control writes to: pino's, a request's or a session's. */
type ControlLog = Pick<Logger, 'info' | 'warn'>;

function providerOf(ctx: BridgeContext): ProviderClient {
  if (ctx.provider === undefined) {
    throw new BridgeError(
      'upstream_unavailable',
      'no provider is configured for call control: set PROVIDER_BASE_URL (and PROVIDER_TOKEN)',
    );
  }
  return ctx.provider;
}

/**
 * Consult and conference are the voice API provider's own call control: a call that came in by another
 * platform's media stream is not one of its calls (409 unsupported_for_dialect, naming the dialect).
 */
export function checkVoiceApiCall(session: SessionInfo): void {
  if (session.dialect !== undefined && session.dialect !== ROOT_DIALECT) {
    throw new BridgeError(
      'unsupported_for_dialect',
      `session "${session.session_id}" came in through the ${session.dialect} media stream; consult and conference are for calls of the voice API provider (dialect ${ROOT_DIALECT}) only`,
    );
  }
}

/** Puts the caller on hold and dials a second party; answers when the provider does (up to its bound). */
export async function consultCall(
  ctx: BridgeContext,
  session: SessionInfo,
  body: ConsultRequest,
  log: ControlLog,
): Promise<ConsultResult> {
  checkVoiceApiCall(session);
  const provider = providerOf(ctx);
  const result = await provider
    .consult(session.session_id, body)
    .catch(logFailure(log, session.session_id, 'consult'));
  log.info(
    { session_id: session.session_id, status: result.status, dialStatus: result.dialStatus },
    'consult finished',
  );
  return result;
}

/** Adds a party to the call or removes one, and keeps the session's `conferenceNumbers` in step. */
export async function conferenceCall(
  ctx: BridgeContext,
  session: SessionInfo,
  body: ConferenceRequest,
  log: ControlLog,
): Promise<ConferenceResult> {
  checkVoiceApiCall(session);
  const provider = providerOf(ctx);
  const result = await provider
    .conference(session.session_id, body)
    .catch(logFailure(log, session.session_id, 'conference'));
  await syncConferenceNumbers(ctx, session, body, result.status);
  log.info(
    { session_id: session.session_id, action: body.action, status: result.status },
    'conference changed',
  );
  return result;
}

/**
 * Logs a failed provider call with the session it was for (the provider client's own line names the
 * call, not the session), then rethrows: upstream faults at warn, the provider's own refusals at info.
 */
function logFailure(log: ControlLog, sessionId: string, call: string) {
  return (err: unknown): never => {
    const code = isBridgeError(err) ? err.code : 'internal';
    log[code.startsWith('upstream_') || code === 'internal' ? 'warn' : 'info'](
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
