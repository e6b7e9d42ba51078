/**
 * Messaging (chat and RCS through the provider's messaging API):
 * - `POST /v1/sessions/{id}/message` (scope `calls:control`): a message to the live call's customer;
 * - `POST /v1/webhooks/messaging` (the provider's webhook: MESSAGING_WEBHOOK_SECRET, no JWT): status and
 *   button events, deduplicated, recorded, and forwarded to the bot of the call a message was sent in;
 * - `GET /v1/messages/{id}` (scope `messages:read`): a message's record;
 * - thin forwarding of template and campaign management (scope `messages:manage`).
 *
 * The customer's number comes from the session's `customer_phone`, read as E.164: a leading "+" (or
 * "00") and spaces, dashes, dots and brackets dropped, then 11 to 15 digits, country code first. Chat is
 * sent those digits; RCS their last 10 (the campaign launcher's `mobile` is 10 digits).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RouteShorthandOptions,
} from 'fastify';
import { Counter } from 'prom-client';
import { bearerToken, type RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { BridgeError, describe, invalidField, isBridgeError } from '../errors.js';
import {
  type ChatMessage,
  MESSAGE_STATUSES,
  type MessageStatus,
  type MessagingClient,
  type MessagingEvent,
  TEMPLATE_CATEGORIES,
  TEMPLATE_STATUSES,
} from '../provider/messaging/types.js';
import {
  CHAT_PHONE,
  validateChatCampaignRequest,
  validateChatSendRequest,
  validateChatTemplateInput,
  validateRcsCampaignRequest,
  validateRcsTemplate,
} from '../provider/messaging/validate.js';
import type { MessageKind, MessageRecord, SessionInfo } from '../state/types.js';
import { principal, scopeGuard } from './guard.js';
import { BEARER, errorResponses, SESSION_ID_PARAMS } from './schemas.js';
import { rejectUnknownFields, useUniformValidation } from './validation.js';

export const WEBHOOK_PATH = '/v1/webhooks/messaging';

/** Events one webhook post may carry; a provider batches far fewer. */
const MAX_EVENTS_PER_POST = 1_000;
/** Largest webhook post: 1,000 events of up to ~1 KB. */
const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;
/** Longest id, number or text field accepted from a webhook. */
const MAX_FIELD_CHARS = 1_024;

// ---------------------------------------------------------------------------------------------------
// Schemas

const SEND_BODY = {
  type: 'object',
  properties: {
    channel: { type: 'string', enum: ['chat', 'rcs'], description: '"chat" or "rcs"' },
    template: {
      type: 'object',
      description:
        'chat: an approved template, {"name", "language", "body_params"?: the body variables in order}',
    },
    message: {
      type: 'object',
      description:
        'chat: a free-form message, {"type": text|image|document|interactive, "<type>": {...}} (within 24 h of the customer\'s last message)',
    },
    template_name: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      description: 'rcs: the name of an existing RCS template (1 to 64 characters)',
    },
    params: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: "rcs: the template's {{variable}} names to their values (strings)",
    },
  },
  required: ['channel'],
} as const;

const SEND_RESULT = {
  type: 'object',
  properties: {
    channel: { type: 'string', enum: ['chat', 'rcs'] },
    message_id: {
      type: ['string', 'null'],
      description: 'chat: the provider message id; rcs: null until the first webhook event names it',
    },
    campaign_id: { type: 'string', description: 'rcs: the campaign the message was launched as' },
    status: { type: 'string', enum: ['sent', 'queued'] },
    session_id: { type: 'string' },
  },
} as const;

const EVENT_SCHEMA = {
  type: 'object',
  properties: {
    kind: { type: 'string', enum: ['status', 'button'] },
    channel: { type: 'string', enum: ['chat', 'rcs'] },
    message_id: { type: 'string' },
    status: { type: 'string', enum: MESSAGE_STATUSES },
    recipient: { type: 'string' },
    from: { type: 'string' },
    timestamp: { type: 'string' },
    button_id: { type: 'string' },
    button_text: { type: 'string' },
    url: { type: 'string' },
    error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } },
  },
} as const;

const RECORD_SCHEMA = {
  type: 'object',
  properties: {
    message_id: { type: 'string' },
    channel: { type: 'string', enum: ['chat', 'rcs'] },
    session_id: { type: 'string' },
    to: { type: 'string' },
    kind: { type: 'string' },
    sent_at: { type: 'string' },
    campaign_id: { type: 'string' },
    status: { type: 'string', enum: MESSAGE_STATUSES, description: 'sent < delivered < read; failed wins' },
    events: { type: 'array', items: EVENT_SCHEMA },
  },
} as const;

const MESSAGE_ID_PARAMS = {
  type: 'object',
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 256, description: 'a message id of 1 to 256 characters' },
  },
  required: ['id'],
} as const;

const NAME_PARAMS = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 512, description: 'a template name' },
  },
  required: ['name'],
} as const;

const CAMPAIGN_ID_PARAMS = {
  type: 'object',
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 256, description: 'a campaign id' },
  },
  required: ['id'],
} as const;

/** Management bodies are checked by the messaging validators (400 naming the field), not by a schema. */
const ANY_OBJECT = { type: 'object', description: 'see the provider document', additionalProperties: true };
const ANY_ANSWER = { type: 'object', additionalProperties: true };

// ---------------------------------------------------------------------------------------------------
// Routes

export function registerMessagingRoutes(
  app: FastifyInstance,
  ctx: BridgeContext,
  verify: RestVerifier,
): void {
  const counted = new Counter({
    name: 'voicebridge_messaging_webhook_events_total',
    help: 'Messaging webhook events, by channel and outcome (new, duplicate, forwarded)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [ctx.metrics.registry],
  });
  app.register(async (scope) => {
    useUniformValidation(scope);
    registerSend(scope, ctx, verify);
    registerWebhook(scope, ctx, counted);
    registerRead(scope, ctx, verify);
    registerManagement(scope, ctx, verify);
  });
}

interface SendBody {
  channel: 'chat' | 'rcs';
  template?: Record<string, unknown>;
  message?: Record<string, unknown>;
  template_name?: string;
  params?: Record<string, string>;
}

function registerSend(scope: FastifyInstance, ctx: BridgeContext, verify: RestVerifier): void {
  scope.post(
    '/v1/sessions/:id/message',
    {
      onRequest: scopeGuard(verify, 'calls:control'),
      preValidation: rejectUnknownFields(Object.keys(SEND_BODY.properties)),
      schema: {
        tags: ['messaging'],
        summary:
          "Send a chat message or template, or an RCS template, to the live call's customer_phone; its events reach the call's bot",
        security: BEARER,
        params: SESSION_ID_PARAMS,
        body: SEND_BODY,
        response: {
          200: SEND_RESULT,
          ...errorResponses(400, 401, 402, 403, 404, 409, 422, 429, 502, 503, 504),
        },
      },
    },
    async (req) => {
      const body = req.body as SendBody;
      // The body first (400), then the session (404), then the provider (503).
      const message = checkSendBody(body);
      const { tenant } = principal(req);
      const { id } = req.params as { id: string };
      const session = await ctx.sessions.get(tenant, id);
      if (session === undefined) {
        throw new BridgeError(
          'not_found',
          `session "${id}" is not live on this bridge for tenant "${tenant}"`,
        );
      }
      const client = messagingOf(ctx);
      return message !== undefined
        ? sendChat(ctx, req, client, session, message)
        : sendRcs(ctx, req, client, session, body);
    },
  );
}

/** A number of the right form, for checking a body before the session's own number is known. */
const SAMPLE_NUMBER = '10000000000';

/** Checks the body whole; for chat, returns the message as the sender takes it. */
function checkSendBody(body: SendBody): ChatMessage | undefined {
  if (body.channel === 'chat') {
    for (const f of ['template_name', 'params'] as const) {
      if (body[f] !== undefined) throw invalidField(f, 'left out on chat (it is for rcs)', body[f]);
    }
    if (body.template !== undefined && body.message !== undefined) {
      throw new BridgeError('invalid_field', 'give template or message on chat, not both', {
        field: 'message',
      });
    }
    if (body.template === undefined && body.message === undefined) {
      throw new BridgeError(
        'invalid_field',
        'template or message is required on chat: an approved template {name, language, body_params?}, or a free-form message',
        { field: 'template' },
      );
    }
    const message =
      body.template !== undefined ? { type: 'template', template: body.template } : body.message;
    // The messaging validators name fields as the provider's body has them: `message.template.name` is
    // this route's `template.name`.
    return renamed(() => validateChatSendRequest({ to: SAMPLE_NUMBER, message }), body.template !== undefined)
      .message;
  }
  for (const f of ['template', 'message'] as const) {
    if (body[f] !== undefined) throw invalidField(f, 'left out on rcs (it is for chat)', body[f]);
  }
  if (body.template_name === undefined) {
    throw new BridgeError(
      'invalid_field',
      'template_name is required on rcs: the name of an existing RCS template',
      {
        field: 'template_name',
      },
    );
  }
  rcsCampaign(body, SAMPLE_NUMBER.slice(-10), 0);
  return undefined;
}

function rcsCampaign(body: SendBody, mobile: string, at: number, sessionId = 'session') {
  return validateRcsCampaignRequest({
    template_name: body.template_name,
    campaign_name: campaignName(sessionId, at),
    contacts: [{ mobile, ...(body.params === undefined ? {} : { params: body.params }) }],
  });
}

async function sendChat(
  ctx: BridgeContext,
  req: FastifyRequest,
  client: MessagingClient,
  session: SessionInfo,
  message: ChatMessage,
) {
  const to = customerNumber(session);
  const request = { to, message };
  const result = await client.sendChatMessage(request).catch(logFailure(req, session, 'chat'));
  const messageId = result.data.message_id;
  req.log.info({ session_id: session.session_id, message_id: messageId, channel: 'chat' }, 'message sent');
  // The message went out: a store that cannot record it costs its events the bot, not the send.
  const record = await ctx.messages
    .recordSent({
      message_id: messageId,
      tenant: session.tenant,
      channel: 'chat',
      session_id: session.session_id,
      to,
      kind: request.message.type as MessageKind,
      sent_at: new Date().toISOString(),
    })
    .catch(logStoreFailure(req.log, session));
  if (record !== undefined) forwardAll(ctx, req.log, record);
  return { channel: 'chat', message_id: messageId, status: 'sent', session_id: session.session_id };
}

async function sendRcs(
  ctx: BridgeContext,
  req: FastifyRequest,
  client: MessagingClient,
  session: SessionInfo,
  body: SendBody,
) {
  const mobile = customerNumber(session).slice(-10);
  const requestedAt = Date.now();
  const campaign = rcsCampaign(body, mobile, requestedAt, session.session_id);
  const result = await client.launchRcsCampaign(campaign).catch(logFailure(req, session, 'rcs'));
  req.log.info(
    { session_id: session.session_id, campaign_id: result.campaign_id, channel: 'rcs' },
    'message queued',
  );
  const record = await ctx.messages
    .recordPendingRcs({
      tenant: session.tenant,
      session_id: session.session_id,
      to: mobile,
      kind: 'rcs_template',
      sent_at: new Date().toISOString(),
      campaign_id: result.campaign_id,
      requested_at_ms: requestedAt,
    })
    .catch(logStoreFailure(req.log, session));
  if (record !== undefined) forwardAll(ctx, req.log, record);
  return {
    channel: 'rcs',
    message_id: record?.message_id ?? null,
    campaign_id: result.campaign_id,
    status: 'queued',
    session_id: session.session_id,
  };
}

/** `call_<session>_<time>_<random>`: lowercase words and underscores, unique per send. */
function campaignName(sessionId: string, at: number): string {
  const slug = sessionId
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40);
  return `call_${slug || 'session'}_${at}_${randomBytes(3).toString('hex')}`;
}

/** The session's customer_phone as the chat API takes it: digits only, with the country code. */
function customerNumber(session: SessionInfo): string {
  const raw = session.customer_phone;
  const digits = raw
    ?.trim()
    .replace(/[\s().-]/g, '')
    .replace(/^(\+|00)/, '');
  if (digits === undefined || !CHAT_PHONE.test(digits)) {
    throw new BridgeError(
      'invalid_field',
      `the session's customer_phone must be a number with its country code (11 to 15 digits, "+" allowed) to be messaged, got ${raw === undefined ? 'nothing' : `${raw.replace(/\D/g, '').length} digits`}`,
      { field: 'customer_phone' },
    );
  }
  return digits;
}

/** Runs a validator, naming `message.template.*` fields as `template.*` when the body gave a template. */
function renamed<T>(validate: () => T, template: boolean): T {
  try {
    return validate();
  } catch (err) {
    if (!template || !isBridgeError(err) || err.field?.startsWith('message.template') !== true) throw err;
    throw new BridgeError(err.code, err.message.replaceAll('message.template', 'template'), {
      field: err.field.replace('message.template', 'template'),
    });
  }
}

function messagingOf(ctx: BridgeContext): MessagingClient {
  if (ctx.messaging === undefined) {
    throw new BridgeError(
      'upstream_unavailable',
      'no messaging provider is configured: set MESSAGING_BASE_URL and MESSAGING_TOKEN',
    );
  }
  return ctx.messaging;
}

/** Logs a failed send with its session, then rethrows: upstream faults at warn, refusals at info. */
function logFailure(req: FastifyRequest, session: SessionInfo, channel: string) {
  return (err: unknown): never => {
    const code = isBridgeError(err) ? err.code : 'internal';
    req.log[code.startsWith('upstream_') || code === 'internal' ? 'warn' : 'info'](
      { session_id: session.session_id, channel, code },
      'message send failed',
    );
    throw err;
  };
}

function logStoreFailure(log: FastifyBaseLogger, session: SessionInfo) {
  return (err: unknown): undefined => {
    log.warn(
      { session_id: session.session_id, err: (err as Error).message },
      "message sent but not recorded: its events will not reach the call's bot",
    );
    return undefined;
  };
}

// ---------------------------------------------------------------------------------------------------
// Webhook

function registerWebhook(
  scope: FastifyInstance,
  ctx: BridgeContext,
  counted: Counter<'channel' | 'outcome'>,
) {
  const { config } = ctx;
  const secret = config.messagingWebhookSecret;
  const expected = secret === undefined ? undefined : digest(secret);
  scope.post(
    WEBHOOK_PATH,
    {
      // A provider may batch: up to MAX_EVENTS_PER_POST events of a few hundred bytes each. A post over
      // the limit would be refused (413) on every retry, so the bound is the batch's, not a person's body.
      bodyLimit: Math.max(config.bodyLimitBytes, WEBHOOK_BODY_LIMIT_BYTES),
      // The provider posts up to a few events per message sent (80 per second) from a few addresses:
      // 20 posts per send allowed, above the per-address REST limit meant for people and scripts.
      config: {
        rateLimit: {
          max: Math.max(
            config.restRateLimit,
            Math.ceil((20 * config.messagingSendsPerSec * config.restRateWindowMs) / 1000),
          ),
          timeWindow: config.restRateWindowMs,
        },
      },
      onRequest: async (req) => {
        if (expected === undefined) {
          // Outside production a missing secret opens the webhook (start-up says so); in production
          // (where messaging needs one) nothing forged may reach the store or a bot.
          if (!config.production) return;
          throw new BridgeError(
            'unauthorized',
            'webhook posts are refused: MESSAGING_WEBHOOK_SECRET is not set on this bridge (required in production)',
          );
        }
        const given = webhookToken(req);
        if (given === undefined || !timingSafeEqual(digest(given), expected)) {
          throw new BridgeError(
            'unauthorized',
            'the webhook post must carry the messaging webhook secret: "Authorization: Bearer <secret>" or ?token=<secret>',
          );
        }
      },
      schema: {
        tags: ['messaging'],
        summary:
          "The provider's messaging webhook: a chat payload, an RCS event, or an array of RCS events; answered at once",
        querystring: {
          type: 'object',
          properties: {
            token: { type: 'string', description: 'the webhook secret, where a header cannot be set' },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              received: { type: 'integer', description: 'events in the post' },
              duplicates: { type: 'integer', description: 'events seen before (not processed again)' },
            },
          },
          ...errorResponses(400, 401, 503),
        },
      },
    },
    async (req, reply: FastifyReply) => {
      const events = parseWebhook(req.body);
      const firsts = await Promise.all(events.map((ev) => ctx.messages.markSeen(dedupeKey(ev))));
      const fresh = events.filter((_, i) => firsts[i] === true);
      for (let i = 0; i < events.length; i++) {
        counted.labels(events[i]!.channel, firsts[i] === true ? 'new' : 'duplicate').inc();
      }
      // Answered now; recorded and forwarded after, in the order the post had them.
      setImmediate(() => void recordAll(ctx, req.log, fresh, counted));
      return reply.send({ received: events.length, duplicates: events.length - fresh.length });
    },
  );
}

function webhookToken(req: FastifyRequest): string | undefined {
  const bearer = bearerToken(req.headers.authorization);
  if (bearer !== undefined) return bearer;
  const q = (req.query as { token?: unknown } | undefined)?.token;
  return typeof q === 'string' ? q : undefined;
}

/** Equal-length digests, so the comparison takes the same time whatever was sent. */
function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Status events count once per message and status; button taps once per message, button and time. */
function dedupeKey(ev: MessagingEvent): string {
  return ev.kind === 'status'
    ? `status\u0000${ev.channel}\u0000${ev.message_id}\u0000${ev.status}`
    : `button\u0000${ev.channel}\u0000${ev.message_id}\u0000${ev.button_id}\u0000${ev.timestamp}`;
}

async function recordAll(
  ctx: BridgeContext,
  log: FastifyBaseLogger,
  events: readonly MessagingEvent[],
  counted: Counter<'channel' | 'outcome'>,
): Promise<void> {
  for (const ev of events) {
    let record: MessageRecord | undefined;
    try {
      record = await ctx.messages.addEvent(ev);
    } catch (err) {
      log.warn({ message_id: ev.message_id, err: (err as Error).message }, 'messaging event not recorded');
      continue;
    }
    if (record?.session_id === undefined) continue;
    counted.labels(ev.channel, 'forwarded').inc();
    forward(ctx, log, record, ev);
  }
}

function forwardAll(ctx: BridgeContext, log: FastifyBaseLogger, record: MessageRecord): void {
  for (const ev of record.events) forward(ctx, log, record, ev);
}

/** Hands the event to the bot of the call the message was sent in, wherever that call is held. */
function forward(
  ctx: BridgeContext,
  log: FastifyBaseLogger,
  record: MessageRecord,
  ev: MessagingEvent,
): void {
  const sessionId = record.session_id;
  if (sessionId === undefined) return;
  ctx.sessionEvents.deliver(record.tenant, sessionId, botNotice(ev)).then(
    (where) =>
      log.debug({ session_id: sessionId, message_id: ev.message_id, where }, 'messaging event forwarded'),
    (err: unknown) =>
      log.warn({ session_id: sessionId, err: (err as Error).message }, 'messaging event not forwarded'),
  );
}

/** What the bot receives: `message_status` or `message_button`. */
export function botNotice(ev: MessagingEvent) {
  if (ev.kind === 'status') {
    return {
      event: 'message_status',
      channel: ev.channel,
      message_id: ev.message_id,
      status: ev.status,
      recipient: ev.recipient,
      timestamp: ev.timestamp,
      ...(ev.error === undefined ? {} : { error: ev.error }),
    };
  }
  return {
    event: 'message_button',
    channel: ev.channel,
    message_id: ev.message_id,
    from: ev.from,
    button_id: ev.button_id,
    button_text: ev.button_text,
    timestamp: ev.timestamp,
  };
}

// ---------------------------------------------------------------------------------------------------
// Webhook payloads: a chat payload (ours, in the nested form of chat networks), an RCS event, or an
// array of RCS events. All or nothing: a malformed post is a 400 naming the first bad field.

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function malformed(field: string, accepts: string, got: unknown): never {
  throw new BridgeError('invalid_field', `${field} must be ${accepts}, got ${describe(got)}`, { field });
}

function obj(v: unknown, field: string): Obj {
  if (!isObj(v)) malformed(field, 'an object', v);
  return v;
}

function list(v: unknown, field: string): unknown[] {
  if (!Array.isArray(v)) malformed(field, 'an array', v);
  return v;
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '' || v.length > MAX_FIELD_CHARS) {
    malformed(field, `a string of 1 to ${MAX_FIELD_CHARS} characters`, v);
  }
  return v;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/;

function time(v: unknown, field: string): string {
  if (typeof v !== 'string' || !ISO_8601.test(v)) malformed(field, 'an ISO 8601 timestamp', v);
  return v;
}

function messageStatus(v: unknown, field: string): MessageStatus {
  if (!(MESSAGE_STATUSES as readonly unknown[]).includes(v)) malformed(field, MESSAGE_STATUSES.join(', '), v);
  return v as MessageStatus;
}

export function parseWebhook(body: unknown): MessagingEvent[] {
  const out: MessagingEvent[] = [];
  const push = (ev: MessagingEvent) => {
    if (out.length >= MAX_EVENTS_PER_POST) {
      throw new BridgeError('bad_request', `a webhook post may carry at most ${MAX_EVENTS_PER_POST} events`);
    }
    out.push(ev);
  };
  if (Array.isArray(body)) {
    if (body.length === 0)
      throw new BridgeError('bad_request', 'the webhook post is an empty array: no events');
    body.forEach((e, i) => {
      push(rcsEvent(obj(e, `[${i}]`), `[${i}].`));
    });
  } else if (isObj(body) && body.object !== undefined) {
    if (body.object !== 'chat') malformed('object', '"chat" (a chat webhook payload)', body.object);
    chatEvents(body, push);
  } else if (isObj(body) && body.event_type !== undefined) {
    push(rcsEvent(body, ''));
  } else {
    throw new BridgeError(
      'bad_request',
      `the webhook post must be a chat payload ({"object": "chat", "entry": [...]}), an RCS event (event_type delivery_status or button_click), or an array of RCS events; got ${describe(body)}`,
    );
  }
  return out;
}

function rcsEvent(e: Obj, p: string): MessagingEvent {
  const timestamp = time(e.timestamp, `${p}timestamp`);
  const message_id = str(e.message_id, `${p}message_id`);
  if (e.event_type === 'delivery_status') {
    const status = messageStatus(e.status, `${p}status`);
    const recipient = str(e.recipient, `${p}recipient`);
    let error: { code: string; message: string } | undefined;
    if (e.error !== undefined) {
      const x = obj(e.error, `${p}error`);
      error = { code: str(x.code, `${p}error.code`), message: str(x.message, `${p}error.message`) };
    }
    return {
      kind: 'status',
      channel: 'rcs',
      message_id,
      status,
      recipient,
      timestamp,
      ...(error === undefined ? {} : { error }),
    };
  }
  if (e.event_type === 'button_click') {
    const from = str(e.user_phone, `${p}user_phone`);
    const i = obj(e.interaction, `${p}interaction`);
    const button_text = str(i.button_text, `${p}interaction.button_text`);
    const postback =
      i.postback_data === undefined ? undefined : str(i.postback_data, `${p}interaction.postback_data`);
    const url = i.url === undefined ? undefined : str(i.url, `${p}interaction.url`);
    return {
      kind: 'button',
      channel: 'rcs',
      message_id,
      from,
      timestamp,
      // Application logic keys on postback_data (rcs.md); url and phone buttons have none.
      button_id: postback ?? button_text,
      button_text,
      ...(url === undefined ? {} : { url }),
    };
  }
  return malformed(`${p}event_type`, 'delivery_status or button_click', e.event_type);
}

function chatEvents(body: Obj, push: (ev: MessagingEvent) => void): void {
  list(body.entry, 'entry').forEach((en, i) => {
    const entry = obj(en, `entry[${i}]`);
    list(entry.changes, `entry[${i}].changes`).forEach((ch, j) => {
      const p = `entry[${i}].changes[${j}]`;
      const change = obj(ch, p);
      // Other fields (template reviews, account updates) are not about messages: skipped.
      if (change.field !== 'messages') return;
      const value = obj(change.value, `${p}.value`);
      if (value.statuses !== undefined) {
        list(value.statuses, `${p}.value.statuses`).forEach((st, k) => {
          push(chatStatus(obj(st, `${p}.value.statuses[${k}]`), `${p}.value.statuses[${k}]`));
        });
      }
      if (value.messages !== undefined) {
        list(value.messages, `${p}.value.messages`).forEach((m, k) => {
          const ev = chatButton(obj(m, `${p}.value.messages[${k}]`), `${p}.value.messages[${k}]`);
          if (ev !== undefined) push(ev);
        });
      }
    });
  });
}

function chatStatus(s: Obj, p: string): MessagingEvent {
  const message_id = str(s.id, `${p}.id`);
  const status = messageStatus(s.status, `${p}.status`);
  const timestamp = time(s.timestamp, `${p}.timestamp`);
  const recipient = str(s.recipient_id, `${p}.recipient_id`);
  let error: { code: string; message: string } | undefined;
  if (s.errors !== undefined) {
    const first = list(s.errors, `${p}.errors`)[0];
    if (first !== undefined) {
      const x = obj(first, `${p}.errors[0]`);
      if (typeof x.code !== 'number' && typeof x.code !== 'string') {
        malformed(`${p}.errors[0].code`, 'a number', x.code);
      }
      error = { code: String(x.code), message: str(x.title, `${p}.errors[0].title`) };
    }
  }
  return {
    kind: 'status',
    channel: 'chat',
    message_id,
    status,
    recipient,
    timestamp,
    ...(error === undefined ? {} : { error }),
  };
}

/**
 * A tapped reply button (interactive `button_reply`) or template quick reply (`button`); other inbound
 * messages (texts, other interactive replies) are not about a message the bridge sent: none.
 */
function chatButton(m: Obj, p: string): MessagingEvent | undefined {
  if (m.type !== 'interactive' && m.type !== 'button') return undefined;
  if (m.type === 'interactive' && (!isObj(m.interactive) || m.interactive.type !== 'button_reply')) {
    if (!isObj(m.interactive)) malformed(`${p}.interactive`, 'an object', m.interactive);
    return undefined;
  }
  const from = str(m.from, `${p}.from`);
  const timestamp = time(m.timestamp, `${p}.timestamp`);
  const message_id = str(obj(m.context, `${p}.context`).id, `${p}.context.id`);
  if (m.type === 'interactive') {
    const r = obj((m.interactive as Obj).button_reply, `${p}.interactive.button_reply`);
    return {
      kind: 'button',
      channel: 'chat',
      message_id,
      from,
      timestamp,
      button_id: str(r.id, `${p}.interactive.button_reply.id`),
      button_text: str(r.title, `${p}.interactive.button_reply.title`),
    };
  }
  const b = obj(m.button, `${p}.button`);
  return {
    kind: 'button',
    channel: 'chat',
    message_id,
    from,
    timestamp,
    button_id: str(b.payload, `${p}.button.payload`),
    button_text: str(b.text, `${p}.button.text`),
  };
}

// ---------------------------------------------------------------------------------------------------
// Records

function registerRead(scope: FastifyInstance, ctx: BridgeContext, verify: RestVerifier): void {
  scope.get(
    '/v1/messages/:id',
    {
      onRequest: scopeGuard(verify, 'messages:read'),
      schema: {
        tags: ['messaging'],
        summary: 'A message the token tenant sent: its latest status and the webhook events about it',
        security: BEARER,
        params: MESSAGE_ID_PARAMS,
        response: { 200: RECORD_SCHEMA, ...errorResponses(401, 403, 404, 503) },
      },
    },
    async (req) => {
      const { tenant } = principal(req);
      const { id } = req.params as { id: string };
      const record = await ctx.messages.get(tenant, id);
      if (record === undefined) {
        throw new BridgeError(
          'not_found',
          `no message "${id}" sent by tenant "${tenant}" is on record (records are kept for MESSAGE_RETENTION_MS)`,
        );
      }
      return record;
    },
  );
}

// ---------------------------------------------------------------------------------------------------
// Template and campaign management: forwarded as they are, checked first by the messaging validators.

function registerManagement(scope: FastifyInstance, ctx: BridgeContext, verify: RestVerifier): void {
  const guard = scopeGuard(verify, 'messages:manage');
  const upstream = [400, 401, 402, 403, 404, 409, 422, 429, 502, 503, 504] as const;
  const opts = (
    summary: string,
    extra: Record<string, unknown> = {},
    ok: Record<number, unknown> = {},
  ): RouteShorthandOptions => ({
    onRequest: guard,
    schema: {
      tags: ['messaging'],
      summary,
      security: BEARER,
      ...extra,
      response: { 200: ANY_ANSWER, ...ok, ...errorResponses(...upstream) },
    },
  });
  const client = () => messagingOf(ctx);

  scope.get(
    '/v1/messaging/chat/templates',
    opts('List the chat templates (filter by status, category)', {
      querystring: {
        type: 'object',
        properties: {
          status: { type: 'string', enum: TEMPLATE_STATUSES, description: TEMPLATE_STATUSES.join(', ') },
          category: {
            type: 'string',
            enum: TEMPLATE_CATEGORIES,
            description: TEMPLATE_CATEGORIES.join(', '),
          },
        },
      },
    }),
    async (req) => {
      const q = req.query as {
        status?: (typeof TEMPLATE_STATUSES)[number];
        category?: (typeof TEMPLATE_CATEGORIES)[number];
      };
      return client().listChatTemplates({
        ...(q.status === undefined ? {} : { status: q.status }),
        ...(q.category === undefined ? {} : { category: q.category }),
      });
    },
  );

  scope.post(
    '/v1/messaging/chat/templates',
    opts('Create a chat template (submitted for review: PENDING)', { body: ANY_OBJECT }, { 201: ANY_ANSWER }),
    async (req, reply) => {
      // The body is the template itself (the provider's templateData).
      const input = validateChatTemplateInput(req.body, 'templateData');
      const template = await client().createChatTemplate(input);
      return reply.code(201).send({ template });
    },
  );

  scope.post(
    '/v1/messaging/chat/templates/sync',
    opts('Pull the latest template statuses from the network operator'),
    async (_req, reply) => {
      await client().syncChatTemplates();
      return reply.code(204).send();
    },
  );

  scope.get(
    '/v1/messaging/chat/templates/:name',
    opts("A chat template's review status", { params: NAME_PARAMS }),
    async (req) => ({
      template: await client().getChatTemplateStatus((req.params as { name: string }).name),
    }),
  );

  scope.delete(
    '/v1/messaging/chat/templates/:name',
    opts('Delete a chat template (not while an active campaign uses it)', { params: NAME_PARAMS }),
    async (req, reply) => {
      await client().deleteChatTemplate((req.params as { name: string }).name);
      return reply.code(204).send();
    },
  );

  scope.post(
    '/v1/messaging/chat/campaigns',
    opts(
      'Send an approved template to an audience list; 207 when saved but not launched',
      { body: ANY_OBJECT },
      { 207: ANY_ANSWER },
    ),
    async (req, reply) => {
      const result = await client().createChatCampaign(validateChatCampaignRequest(req.body));
      return reply.code(result.launched ? 200 : 207).send(result);
    },
  );

  scope.post(
    '/v1/messaging/chat/campaigns/:id/launch',
    opts(
      'Retry the launch of a campaign saved with its launch failed (207)',
      { params: CAMPAIGN_ID_PARAMS },
      { 207: ANY_ANSWER },
    ),
    async (req, reply) => {
      const result = await client().launchChatCampaign((req.params as { id: string }).id);
      return reply.code(result.launched ? 200 : 207).send(result);
    },
  );

  scope.post(
    '/v1/messaging/rcs/templates',
    opts('Create an RCS template (text, standalone or carousel)', { body: ANY_OBJECT }, { 201: ANY_ANSWER }),
    async (req, reply) => {
      // `action` is the provider's; it may be left out here.
      const template = validateRcsTemplate({ action: 'create_template', ...(req.body as object) });
      return reply.code(201).send(await client().createRcsTemplate(template));
    },
  );

  scope.post(
    '/v1/messaging/rcs/campaigns',
    opts('Launch an RCS template to a contact list (10-digit mobiles)', { body: ANY_OBJECT }),
    async (req) => client().launchRcsCampaign(validateRcsCampaignRequest(req.body)),
  );
}
