/**
 * A message to a live call's customer, as `POST /v1/sessions/{id}/message` sends it (routes.ts) and as the
 * model's `send_message` tool does (src/tools/): the body checked whole, then a chat message through the
 * sender, a chat template as a campaign of one, or an RCS template through the launcher, recorded so its
 * events reach the call's bot. The rules are the provider's, as the client maps them: the chat 24-hour
 * window (131047 -> window_closed), templates by name, RCS only to numbers of MESSAGING_RCS_COUNTRY_CODE.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { BridgeContext } from '../context.js';
import { BridgeError, invalidField, isBridgeError } from '../errors.js';
import type { SessionInfo } from '../state/types.js';
import { messagingOf } from './manage.js';
import { customerMobile, customerNumber } from './phone.js';
import type { CampaignSends, MessageKind, MessageRecord } from './records.js';
import type { CallTemplate, ChatMessage, MessagingClient } from './types.js';
import {
  templateCampaign,
  validateCallTemplate,
  validateChatSendRequest,
  validateRcsCampaignRequest,
} from './validate.js';
import { forwardAll } from './webhook.js';

export interface SendBody {
  channel: 'chat' | 'rcs';
  template?: Record<string, unknown>;
  message?: Record<string, unknown>;
  template_name?: string;
  params?: Record<string, string>;
}

/** What the send answers: the route's 200 body, the tool's output. */
export type SendResult =
  | Awaited<ReturnType<typeof sendChat>>
  | Awaited<ReturnType<typeof sendTemplate>>
  | Awaited<ReturnType<typeof sendRcs>>;

/** Sends a checked body to `session`'s customer (checkSendBody first: a 400 before the session is read). */
export function sendToCaller(
  ctx: BridgeContext,
  log: FastifyBaseLogger,
  session: SessionInfo,
  checked: CheckedSend,
  body: SendBody,
): Promise<SendResult> {
  const client = messagingOf(ctx);
  switch (checked.kind) {
    case 'message':
      return sendChat(ctx, log, client, session, checked.message);
    case 'template':
      return sendTemplate(ctx, log, client, session, checked.template);
    case 'rcs':
      return sendRcs(ctx, log, client, session, body);
  }
}

/** A number of the right form, for checking a body before the session's own number is known. */
const SAMPLE_NUMBER = '10000000000';

/** What a send body asks for, checked whole. */
export type CheckedSend =
  | { readonly kind: 'message'; readonly message: ChatMessage }
  | { readonly kind: 'template'; readonly template: CallTemplate }
  | { readonly kind: 'rcs' };

/** Checks the body whole: a chat message as the sender takes it, a chat template, or an RCS template. */
export function checkSendBody(body: SendBody): CheckedSend {
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
  log: FastifyBaseLogger,
  client: MessagingClient,
  session: SessionInfo,
  message: ChatMessage,
) {
  const to = customerNumber(session);
  const request = { to, message };
  const result = await client.sendChatMessage(request).catch(logFailure(log, session, 'chat'));
  const messageId = result.data.message_id;
  log.info({ session_id: session.session_id, message_id: messageId, channel: 'chat' }, 'message sent');
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
    .catch(logStoreFailure(log, session));
  if (record !== undefined) forwardAll(ctx, log, record);
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
  log: FastifyBaseLogger,
  client: MessagingClient,
  session: SessionInfo,
  template: CallTemplate,
) {
  const to = customerNumber(session);
  const requestedAt = Date.now();
  const request = templateCampaign(to, template, campaignName(session.session_id));
  const result = await client.createChatCampaign(request).catch(logFailure(log, session, 'chat'));
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
  log.info(
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
    const outcome = await ctx.messages.recordCampaign(campaign).catch(logStoreFailure(log, session));
    record = outcome?.adopted[0];
    if (record !== undefined) forwardAll(ctx, log, record);
  } else {
    await ctx.messages.saveCampaign(campaign).catch(logStoreFailure(log, session));
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
  log: FastifyBaseLogger,
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
    return logFailure(log, session, 'rcs')(err);
  });
  log.info(
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
      return logStoreFailure(log, session)(err);
    });
  if (record !== undefined) forwardAll(ctx, log, record);
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
function logFailure(log: FastifyBaseLogger, session: SessionInfo, channel: string) {
  return (err: unknown): never => {
    const code = isBridgeError(err) ? err.code : 'internal';
    log[code.startsWith('upstream_') || code === 'internal' ? 'warn' : 'info'](
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
