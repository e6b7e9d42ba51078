/**
 * Messaging (chat and RCS through the provider's messaging API):
 * - `POST /v1/sessions/{id}/message` (scope `calls:control`): a message to the live call's customer;
 * - `POST /v1/webhooks/messaging` (the provider's webhook: MESSAGING_WEBHOOK_SECRET, no JWT): status and
 *   button events, deduplicated, recorded, and forwarded to the bot of the call a message was sent in;
 * - `GET /v1/messages/{id}` (scope `messages:read`): a message's record;
 * - template and campaign management forwarded (scope `messages:manage`), a launched campaign's messages
 *   recorded too.
 *
 * This file holds the session message route and the record route, and registers all of them; the
 * webhook is in webhook.ts, the management routes in manage.ts.
 *
 * The customer's number comes from the session's `customer_phone`, read as E.164: a leading "+" (or
 * "00") and spaces, dashes, dots and brackets dropped, then a country code and a national number of a
 * length that country uses. Chat is sent those digits; RCS the 10-digit national number, and only for
 * numbers of MESSAGING_RCS_COUNTRY_CODE (the campaign launcher's `mobile` is 10 digits of one country).
 * A number that does not fit is a 422 `unusable_customer_phone`.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { Counter } from 'prom-client';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { principal, scopeGuard } from '../control/guard.js';
import { BEARER, errorResponses, SESSION_ID_PARAMS } from '../control/schemas.js';
import { rejectUnknownFields, useUniformValidation } from '../control/validation.js';
import { BridgeError, invalidField, isBridgeError } from '../errors.js';
import type { SessionInfo } from '../state/types.js';
import { messagingOf, registerManagement } from './manage.js';
import { customerMobile, customerNumber } from './phone.js';
import type { CampaignSends, MessageKind, MessageRecord } from './records.js';
import { type CallTemplate, type ChatMessage, MESSAGE_STATUSES, type MessagingClient } from './types.js';
import {
  templateCampaign,
  validateCallTemplate,
  validateChatSendRequest,
  validateRcsCampaignRequest,
} from './validate.js';
import { forwardAll, registerWebhook } from './webhook.js';

// ---------------------------------------------------------------------------------------------------
// Schemas

const SEND_BODY = {
  type: 'object',
  properties: {
    channel: { type: 'string', enum: ['chat', 'rcs'], description: '"chat" or "rcs"' },
    template: {
      type: 'object',
      description:
        'chat: an approved template, {"name", "language"?, "body_params"?: the body variables in order}, sent as a campaign of one',
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
      description:
        'a chat message: the provider message id; a template (chat or rcs): null until the first webhook event names it',
    },
    campaign_id: { type: 'string', description: 'a template: the campaign the message was launched as' },
    status: {
      type: 'string',
      enum: ['sent', 'queued', 'saved'],
      description:
        'sent: a chat message the sender took; queued: a template launched (chat: a campaign of one; rcs); saved: a chat template whose launch failed at the provider, held until POST /v1/messaging/chat/campaigns/{campaign_id}/launch',
    },
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
    session_id: { type: 'string', description: 'the call it was sent in; absent for campaign sends' },
    to: { type: 'string' },
    kind: {
      type: 'string',
      description: 'the chat message type, rcs_template, or campaign (one recipient of a campaign)',
    },
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
        description:
          "The number is the session's customer_phone (from its session_start): 422 unusable_customer_phone when it cannot be messaged (RCS: only numbers of MESSAGING_RCS_COUNTRY_CODE with a 10-digit national number). RCS answers message_id null: the message's first webhook event (sent) names it; while it waits, another call's RCS send to the same number is 409 conflict.",
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
      const checked = checkSendBody(body);
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
      switch (checked.kind) {
        case 'message':
          return sendChat(ctx, req, client, session, checked.message);
        case 'template':
          return sendTemplate(ctx, req, client, session, checked.template);
        case 'rcs':
          return sendRcs(ctx, req, client, session, body);
      }
    },
  );
}

/** A number of the right form, for checking a body before the session's own number is known. */
const SAMPLE_NUMBER = '10000000000';

/** What a send body asks for, checked whole. */
type Checked =
  | { readonly kind: 'message'; readonly message: ChatMessage }
  | { readonly kind: 'template'; readonly template: CallTemplate }
  | { readonly kind: 'rcs' };

/** Checks the body whole: a chat message as the sender takes it, a chat template, or an RCS template. */
function checkSendBody(body: SendBody): Checked {
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
        'template or message is required on chat: an approved template {name, language?, body_params?}, or a free-form message',
        { field: 'template' },
      );
    }
    if (body.template !== undefined) {
      const template = validateCallTemplate(body.template);
      templateCampaign(SAMPLE_NUMBER, template, campaignName('session'));
      return { kind: 'template', template };
    }
    return {
      kind: 'message',
      message: validateChatSendRequest({ to: SAMPLE_NUMBER, message: body.message }).message,
    };
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
  rcsCampaign(body, SAMPLE_NUMBER.slice(-10));
  return { kind: 'rcs' };
}

function rcsCampaign(body: SendBody, mobile: string, sessionId = 'session') {
  return validateRcsCampaignRequest({
    template_name: body.template_name,
    campaign_name: campaignName(sessionId),
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

/**
 * A chat template to the call's customer, as chat.md defines a template send: the campaign creator with
 * one audience row (the sender lists free-form types only). The creator answers a campaign, not a
 * message id: the send is recorded pending, and the first event (`sent`) for the number names it, as
 * with RCS. A campaign saved with its launch failed (207) is held until it is relaunched
 * (`POST /v1/messaging/chat/campaigns/{campaign_id}/launch`), and answered `saved`.
 */
async function sendTemplate(
  ctx: BridgeContext,
  req: FastifyRequest,
  client: MessagingClient,
  session: SessionInfo,
  template: CallTemplate,
) {
  const to = customerNumber(session);
  const requestedAt = Date.now();
  const request = templateCampaign(to, template, campaignName(session.session_id));
  const result = await client.createChatCampaign(request).catch(logFailure(req, session, 'chat'));
  const campaign: CampaignSends = {
    tenant: session.tenant,
    channel: 'chat',
    session_id: session.session_id,
    kind: 'template',
    campaign_id: result.campaign.id,
    recipients: [to],
    sent_at: new Date().toISOString(),
    requested_at_ms: requestedAt,
  };
  req.log.info(
    {
      session_id: session.session_id,
      campaign_id: result.campaign.id,
      channel: 'chat',
      launched: result.launched,
    },
    result.launched ? 'message queued' : 'message saved, its launch failed',
  );
  let record: MessageRecord | undefined;
  if (result.launched) {
    const outcome = await ctx.messages.recordCampaign(campaign).catch(logStoreFailure(req.log, session));
    record = outcome?.adopted[0];
    if (record !== undefined) forwardAll(ctx, req.log, record);
  } else {
    await ctx.messages.saveCampaign(campaign).catch(logStoreFailure(req.log, session));
  }
  return {
    channel: 'chat',
    message_id: record?.message_id ?? null,
    campaign_id: result.campaign.id,
    status: result.launched ? 'queued' : 'saved',
    session_id: session.session_id,
  };
}

async function sendRcs(
  ctx: BridgeContext,
  req: FastifyRequest,
  client: MessagingClient,
  session: SessionInfo,
  body: SendBody,
) {
  const mobile = customerMobile(session, ctx.config.messagingRcsCountryCode);
  // Asked for from now on (a first event stamped before this is another message's).
  const requestedAt = Date.now();
  const campaign = rcsCampaign(body, mobile, session.session_id);
  // The launcher answers with no message id: the send takes the id of the first event for the number.
  // Two calls' sends waiting on one number at once could take each other's (any tenant's): refused.
  const reservation = await ctx.messages.reserveRcs(mobile);
  if (reservation === undefined) {
    throw new BridgeError(
      'conflict',
      'another RCS message to this caller is still waiting for its first delivery event (it names the message); try again shortly, or send chat',
    );
  }
  const result = await client.launchRcsCampaign(campaign).catch(async (err: unknown) => {
    await ctx.messages.releaseRcs(mobile, reservation).catch(() => undefined);
    return logFailure(req, session, 'rcs')(err);
  });
  req.log.info(
    { session_id: session.session_id, campaign_id: result.campaign_id, channel: 'rcs' },
    'message queued',
  );
  const record = await ctx.messages
    .recordPendingRcs(
      {
        tenant: session.tenant,
        session_id: session.session_id,
        to: mobile,
        kind: 'rcs_template',
        sent_at: new Date().toISOString(),
        campaign_id: result.campaign_id,
        requested_at_ms: requestedAt,
      },
      reservation,
    )
    .catch(async (err: unknown) => {
      // Not recorded: the number is not held for this send either (else no call could send to it for
      // PENDING_TTL_MS).
      await ctx.messages.releaseRcs(mobile, reservation).catch(() => undefined);
      return logStoreFailure(req.log, session)(err);
    });
  if (record !== undefined) forwardAll(ctx, req.log, record);
  return {
    channel: 'rcs',
    message_id: record?.message_id ?? null,
    campaign_id: result.campaign_id,
    status: 'queued',
    session_id: session.session_id,
  };
}

/**
 * `call_<session>_<random>`: chat.md takes campaign names of lowercase letters joined by underscores
 * (no digits), unique per run; 14 random letters (~65 bits) keep each send's own.
 */
function campaignName(sessionId: string): string {
  const slug = sessionId
    .toLowerCase()
    .replace(/[^a-z]+/g, '_')
    .slice(0, 40)
    .replace(/^_+|_+$/g, '');
  const random = [...randomBytes(14)].map((b) => String.fromCharCode(97 + (b % 26))).join('');
  return `call_${slug || 'session'}_${random}`;
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
