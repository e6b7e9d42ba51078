import type { FastifyInstance } from 'fastify';
import { Counter } from 'prom-client';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { principal, scopeGuard } from '../control/guard.js';
import { BEARER, errorResponses, SESSION_ID_PARAMS } from '../control/schemas.js';
import { rejectUnknownFields, useUniformValidation } from '../control/validation.js';
import { BridgeError } from '../errors.js';
import { registerManagement } from './manage.js';
import { checkSendBody, type SendBody, sendToCaller } from './send.js';
import { MESSAGE_STATUSES } from './types.js';
import { registerWebhook } from './webhook.js';

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
      return sendToCaller(ctx, req.log, session, checked, body);
    },
  );
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
