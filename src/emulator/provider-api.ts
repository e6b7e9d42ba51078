/**
 * The provider's voice REST API as the emulator serves it under `/v1`:
 * media-stream GET/PUT (scope media:manage), the session list and detail, consult and conference with
 * dial-plan outcomes and timings.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseCodec } from '../audio/format.js';
import { assertScope, type RestVerifier } from '../auth/jwt.js';
import { configFromUpsert, effectiveConfig, secretHint } from '../control/media-stream.js';
import { BridgeError, invalidField } from '../errors.js';
import type { ConferenceResult, ConsultResult, ProviderMediaStreamConfig } from '../provider/types.js';
import { type DialPlan, dialOutcome } from './dial-plan.js';
import {
  type EmulatorSession,
  type EmulatorState,
  type ExternalSessionLookup,
  sessionView,
} from './state.js';

export interface ProviderApiOptions {
  readonly state: EmulatorState;
  readonly verify: RestVerifier;
  readonly dialPlan: DialPlan;
  /** How long a NOANSWER dial rings before it times out (the provider's default is 20 s). */
  readonly dialTimeoutMs: number;
  /** Sessions the emulator did not place but should take call control for (e.g. the bridge's). */
  readonly lookupSession?: ExternalSessionLookup | undefined;
  /** Take call control for any session id, creating it on first use (for a bridge run separately). */
  readonly acceptAnySession?: boolean;
  /** Aborted when the emulator closes: dials in progress end with 503. */
  readonly signal: AbortSignal;
}

/** Waits `ms`, or rejects with a 503 when the emulator shuts down first. */
function ring(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const stop = () => {
      clearTimeout(timer);
      reject(new BridgeError('upstream_unavailable', 'the provider emulator is shutting down'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
}

const numberField = (body: Record<string, unknown>, field: string, required: boolean): string | undefined => {
  const v = body[field];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || !/^\+?[0-9]{1,32}$/.test(v)) {
    throw invalidField(field, 'a bare phone number (digits, optionally after "+")', v);
  }
  return v;
};

const bodyOf = (req: FastifyRequest): Record<string, unknown> => {
  const b = req.body;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) {
    throw new BridgeError('bad_request', 'the request body must be a JSON object');
  }
  return b as Record<string, unknown>;
};

export function registerProviderApi(app: FastifyInstance, o: ProviderApiOptions): void {
  const auth = async (req: FastifyRequest, scope?: string) => {
    const p = await o.verify(req.headers.authorization);
    if (scope !== undefined) assertScope(p, scope);
    return p;
  };

  /** The session of `id`, adopting one the bridge reports (or any, when so configured). */
  async function session(tenant: string, id: string): Promise<EmulatorSession> {
    const known = o.state.getSession(tenant, id);
    if (known?.placed) return known;
    if (o.lookupSession !== undefined) {
      const ext = await o.lookupSession(tenant, id);
      if (ext !== undefined) {
        return (
          known ??
          o.state.addSession({
            tenant,
            session_id: id,
            customer_phone: ext.customer_phone ?? '',
            direction: ext.direction ?? 'inbound',
            started_at: ext.started_at ?? new Date().toISOString(),
            placed: false,
          })
        );
      }
      if (known !== undefined) o.state.removeSession(tenant, id); // it ended on the bridge
    }
    if (o.acceptAnySession === true) {
      return (
        o.state.getSession(tenant, id) ??
        o.state.addSession({
          tenant,
          session_id: id,
          customer_phone: '',
          direction: 'inbound',
          started_at: new Date().toISOString(),
          placed: false,
        })
      );
    }
    throw new BridgeError('not_found', `session ${id} not found`);
  }

  const withHint = (c: ProviderMediaStreamConfig, secret: string | undefined) => ({
    ...c,
    ...(secret !== undefined ? { secret_hint: secretHint(secret) } : {}),
  });

  app.get('/v1/media-stream', async (req) => {
    const { tenant } = await auth(req, 'media:manage');
    const stored = o.state.getStream(tenant);
    if (stored === undefined)
      throw new BridgeError('not_found', 'no media stream is registered for this tenant');
    return withHint(stored.config, stored.secret);
  });

  app.put('/v1/media-stream', async (req) => {
    const { tenant } = await auth(req, 'media:manage');
    const body = bodyOf(req);
    // The provider stores its defaults for the fields left out.
    const parsed = effectiveConfig(configFromUpsert(tenant, body));
    if (
      body.media_secret !== undefined &&
      (typeof body.media_secret !== 'string' || body.media_secret === '')
    ) {
      // Write-only: not echoed back even when it is wrong.
      throw new BridgeError('invalid_field', 'media_secret must be a non-empty string', {
        field: 'media_secret',
      });
    }
    // Keep the caller's codec name (e.g. "PCM16"): it is what the emulator announces in session_start.
    const codec = body.codec === undefined ? parsed.codec : String(body.codec);
    parseCodec(codec);
    const stored = o.state.putStream(tenant, { ...parsed, codec }, body.media_secret as string | undefined);
    return withHint(stored.config, stored.secret);
  });

  app.get('/v1/sessions', async (req) => {
    const { tenant } = await auth(req);
    return o.state.listSessions(tenant).map(sessionView);
  });

  app.get('/v1/sessions/:id', async (req) => {
    const { tenant } = await auth(req);
    return sessionView(await session(tenant, (req.params as { id: string }).id));
  });

  app.post('/v1/sessions/:id/consult', async (req): Promise<ConsultResult> => {
    const { tenant } = await auth(req);
    const body = bodyOf(req);
    const calledParty = numberField(body, 'calledParty', true)!;
    numberField(body, 'callerId', false);
    const s = await session(tenant, (req.params as { id: string }).id);
    if (s.consulting)
      throw new BridgeError('conflict', `session ${s.session_id} already has a consult in progress`);
    s.consulting = true;
    try {
      const out = dialOutcome(o.dialPlan, calledParty, o.dialTimeoutMs);
      await ring(out.afterMs, o.signal);
      return {
        sessionId: s.session_id,
        consultId: `consult-${s.session_id}`,
        status: out.status,
        dialStatus: out.dialStatus,
        ...(out.status === 'failed' ? { cause: out.cause!, causeText: out.causeText! } : {}),
      };
    } finally {
      s.consulting = false;
    }
  });

  app.post('/v1/sessions/:id/conference', async (req): Promise<ConferenceResult> => {
    const { tenant } = await auth(req);
    const body = bodyOf(req);
    const action = body.action;
    if (action !== 'add' && action !== 'delete') throw invalidField('action', '"add" or "delete"', action);
    const number = numberField(body, 'number', true)!;
    numberField(body, 'callerId', false);
    const s = await session(tenant, (req.params as { id: string }).id);
    const channelId = `conf-${s.session_id}-${number}`;
    if (action === 'delete') {
      const i = s.conference.indexOf(number);
      if (i === -1)
        throw new BridgeError('not_found', `${number} is not in the conference of session ${s.session_id}`);
      s.conference.splice(i, 1);
      // The member's answered channel, now hung up.
      return { sessionId: s.session_id, number, channelId, status: 'answered', dialStatus: 'ANSWER' };
    }
    if (s.conference.includes(number)) {
      throw new BridgeError('conflict', `${number} is already in the conference of session ${s.session_id}`);
    }
    if (s.dialling.has(number)) {
      throw new BridgeError('conflict', `${number} is already being dialled into session ${s.session_id}`);
    }
    s.dialling.add(number);
    try {
      const out = dialOutcome(o.dialPlan, number, o.dialTimeoutMs);
      await ring(out.afterMs, o.signal);
      if (out.status === 'answered') s.conference.push(number);
      return { sessionId: s.session_id, number, channelId, status: out.status, dialStatus: out.dialStatus };
    } finally {
      s.dialling.delete(number);
    }
  });
}
