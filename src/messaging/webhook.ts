/**
 * The provider's messaging webhook, `POST /v1/webhooks/messaging` (MESSAGING_WEBHOOK_SECRET, no JWT):
 * chat and RCS payloads parsed into `MessagingEvent`s, a bad event skipped and reported (a post is
 * refused whole only when it cannot be read at all); each event deduplicated and recorded in one step;
 * answered once the store has every event (503 when it could not, so that the provider posts again);
 * events forwarded to the bot of the call a message was sent in.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Counter } from 'prom-client';
import { bearerToken } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { errorResponses } from '../control/schemas.js';
import { BridgeError, isBridgeError } from '../errors.js';
import type { MessageRecord } from './records.js';
import { eventNumber, recipientOf } from './rules.js';
import type { MessagingEvent } from './types.js';
import { parseWebhook } from './webhook-payload.js';

export const WEBHOOK_PATH = '/v1/webhooks/messaging';

/** Largest webhook post: 1,000 events of up to ~1 KB. */
const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

// ---------------------------------------------------------------------------------------------------
// Webhook

export function registerWebhook(
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
          "The provider's messaging webhook: a chat payload, an RCS event, or an array of RCS events; answered once every event is recorded (503: post again), a bad event skipped and reported",
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
              received: { type: 'integer', description: 'events read from the post' },
              duplicates: {
                type: 'integer',
                description: 'of those, events seen before (recorded once, not forwarded again)',
              },
              rejected: {
                type: 'integer',
                description: 'events that could not be read, skipped (present when there are any)',
              },
              first_rejection: {
                type: 'string',
                description: "the first skipped event's field and what it accepts",
              },
            },
          },
          ...errorResponses(400, 401, 503),
        },
      },
    },
    async (req, reply: FastifyReply) => {
      const post = parseWebhook(req.body);
      if (post.rejected > 0) {
        counted.labels(post.channel, 'rejected').inc(post.rejected);
        // The field only: a rejection's message may quote what the post held.
        req.log.info(
          { rejected: post.rejected, field: post.firstRejection?.field },
          'webhook events skipped',
        );
      }
      // Each event is deduplicated and recorded in one step, in the post's order (the store takes them
      // in the order they are asked: one connection, or no awaiting in memory).
      const settled = await Promise.allSettled(
        post.events.map((ev) =>
          ctx.messages.addEvent(ev, recipientOf(ev.channel, eventNumber(ev), config.messagingRcsCountryCode)),
        ),
      );
      let duplicates = 0;
      let failures = 0;
      let failure: unknown;
      settled.forEach((s, i) => {
        const ev = post.events[i]!;
        if (s.status === 'rejected') {
          failures++;
          failure ??= s.reason;
          return;
        }
        counted.labels(ev.channel, s.value.fresh ? 'new' : 'duplicate').inc();
        if (!s.value.fresh) duplicates++;
        // Recorded: forwarded now, even when the post is answered 503 (its retry counts these as duplicates).
        const record = s.value.record;
        if (record?.session_id === undefined) return;
        for (const added of s.value.added) {
          counted.labels(added.channel, 'forwarded').inc();
          forward(ctx, req.log, record, added);
        }
      });
      if (failure !== undefined) {
        req.log.warn(
          { events: post.events.length, not_recorded: failures, err: (failure as Error).message },
          'messaging webhook events not recorded',
        );
        // Nothing unrecorded is marked seen: the provider's retry brings those events back as new.
        throw isBridgeError(failure) && failure.status === 503
          ? failure
          : new BridgeError(
              'store_unavailable',
              `the message store could not record ${failures} of the post's ${post.events.length} events; post it again (the events recorded count as duplicates)`,
            );
      }
      return reply.send({
        received: post.events.length,
        duplicates,
        ...(post.firstRejection === undefined
          ? {}
          : { rejected: post.rejected, first_rejection: post.firstRejection.message }),
      });
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

export function forwardAll(ctx: BridgeContext, log: FastifyBaseLogger, record: MessageRecord): void {
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
