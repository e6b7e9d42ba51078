/**
 * What every message store shares, in memory and on Redis: the status rank, the bounds and waits, the
 * recipient and dedupe keys, the adoption rule.
 *
 * Pending sends (RCS sends, campaign recipients) wait PENDING_TTL_MS for their first event, no longer.
 * Events for a message no record matches yet are held ORPHAN_TTL_MS, in case the sender's answer (with
 * the message id) is still on its way when the webhook arrives.
 *
 * Adoption: a pending send names no message id, so the first event of a message to its recipient names
 * it. Only a message's first event counts (status `sent`, or a `failed` when nothing else of the message
 * came before it), stamped no earlier than the send was asked for (less CLOCK_SKEW_MS): a later event
 * (delivered, read, a button) of a message whose `sent` was never matched is some other message's, and so
 * is one stamped before the send.
 */
import { randomBytes } from 'node:crypto';
import type { CampaignSends, PendingSend, SentMessage } from './records.js';
import type { MessageStatus, MessagingEvent } from './types.js';
import { rcsMobileFrom } from './validate-fields.js';

/** Events listed per record; later ones still move the status. A button tapped 100 times is enough. */
export const MAX_EVENTS_PER_MESSAGE = 100;
/** How long events for an unknown message wait for the send they belong to be recorded. */
export const ORPHAN_TTL_MS = 60_000;
/** Events held per unknown message. */
export const MAX_ORPHAN_EVENTS = 20;
/**
 * How long a pending send waits for its first event. The provider posts `sent` within seconds of
 * sending; one that has not come in 10 minutes is not coming (the send failed upstream, the post was
 * lost), and a send kept waiting longer would take the id of an unrelated later message to the number.
 */
export const PENDING_TTL_MS = 10 * 60_000;
/**
 * The provider's campaign pace (chat.md, rcs.md: 80 messages a second per account): a campaign's last
 * recipient is sent this long after its first, so its pending sends wait that much longer.
 */
export const CAMPAIGN_SENDS_PER_SEC = 80;
/**
 * How far the provider's clock (an event's timestamp) may be behind ours (the time a send was asked
 * for), and one instance's behind another's: 5 s, well above NTP-kept clocks' drift.
 */
export const CLOCK_SKEW_MS = 5_000;
/**
 * Recipients a campaign launched through the bridge may have (more is refused before the provider is
 * asked): each is a pending send, and a store must hold all of a campaign's and still have room for
 * calls' sends. The memory store holds DEFAULT_MAX_PENDING; Redis keeps the same limit.
 */
export const MAX_CAMPAIGN_RECIPIENTS = 10_000;
/** Pending sends (and saved campaigns' recipients) the memory store holds: several full campaigns. */
export const DEFAULT_MAX_PENDING = 50_000;

const RANK: Readonly<Record<MessageStatus, number>> = { sent: 1, delivered: 2, read: 3, failed: 4 };

/** The status after `event`: the higher rank of the two; failed wins and stays. */
export function nextStatus(current: MessageStatus, event: MessagingEvent): MessageStatus {
  if (event.kind !== 'status' || current === 'failed') return current;
  return RANK[event.status] > RANK[current] ? event.status : current;
}

/**
 * The RCS recipient key: the launcher's 10-digit `mobile`. A number of 10 digits is one already; a
 * longer one only when it is of `countryCode` with a 10-digit national number (never its last 10
 * digits: +49 151 23456789 is not 5123456789). Undefined otherwise.
 */
export function rcsMobile(number: string, countryCode: string): string | undefined {
  const digits = number.replace(/\D/g, '');
  if (digits.length === 10) return digits;
  return digits.length > 10 ? rcsMobileFrom(digits, countryCode) : undefined;
}

/** The number an event is about: the recipient of a status, the tapping number of a button. */
export function eventNumber(event: MessagingEvent): string {
  return event.kind === 'status' ? event.recipient : event.from;
}

/**
 * The recipient a pending send and an event are matched by: chat the number's digits, RCS its 10-digit
 * mobile (rcsMobile, with the country code RCS goes to: MESSAGING_RCS_COUNTRY_CODE); undefined when
 * there is none.
 */
export function recipientOf(
  channel: 'chat' | 'rcs',
  number: string,
  rcsCountryCode: string,
): string | undefined {
  if (channel === 'rcs') return rcsMobile(number, rcsCountryCode);
  const digits = number.replace(/\D/g, '');
  return digits === '' ? undefined : digits;
}

/** Status events count once per message and status; button taps once per message, button and time. */
export function dedupeKey(ev: MessagingEvent): string {
  return ev.kind === 'status'
    ? `status\u0000${ev.channel}\u0000${ev.message_id}\u0000${ev.status}`
    : `button\u0000${ev.channel}\u0000${ev.message_id}\u0000${ev.button_id}\u0000${ev.timestamp}`;
}

/**
 * When a message's first event was stamped (ms since the epoch, the provider's clock), or undefined
 * when `event` cannot be a first event and may adopt no pending send: only status `sent`, or `failed`
 * (a message refused at once, e.g. INVALID_NUMBER, may have no other event). A `failed` counts as the
 * first only when nothing else of its message has been seen (the stores check: earlierStatusKeys).
 */
export function firstEventTime(event: MessagingEvent): number | undefined {
  if (event.kind !== 'status' || (event.status !== 'sent' && event.status !== 'failed')) return undefined;
  const t = Date.parse(event.timestamp);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * The dedupe keys of the statuses a message has before a `failed` (sent, delivered, read): a `failed`
 * whose message has any of them seen is not its first event.
 */
export function earlierStatusKeys(event: MessagingEvent): string[] {
  return (['sent', 'delivered', 'read'] as const).map((s) =>
    dedupeKey({ ...event, kind: 'status', status: s } as MessagingEvent),
  );
}

/** How long the pending sends of a campaign of `recipients` wait: PENDING_TTL_MS after its last is sent. */
export function pendingTtlMs(recipients: number): number {
  return PENDING_TTL_MS + Math.ceil(recipients / CAMPAIGN_SENDS_PER_SEC) * 1000;
}

/** A reservation's id: unguessable, so that only its holder ends it. */
export function reservationId(): string {
  return randomBytes(9).toString('base64url');
}

/** What every pending send of a campaign holds but its recipient (both stores build them here). */
export function campaignSend(c: CampaignSends): Omit<PendingSend, 'to'> {
  return {
    tenant: c.tenant,
    channel: c.channel,
    ...(c.session_id === undefined ? {} : { session_id: c.session_id }),
    kind: c.kind ?? 'campaign',
    sent_at: c.sent_at,
    campaign_id: c.campaign_id,
    requested_at_ms: c.requested_at_ms,
  };
}

/** The pending sends of one campaign, one per recipient (kind `campaign`, or the campaign's own). */
export function campaignSends(c: CampaignSends): PendingSend[] {
  const send = campaignSend(c);
  return c.recipients.map((to) => ({ ...send, to }));
}

/** The record of a pending send once its message id is known. */
export function adopted(send: PendingSend, messageId: string): SentMessage {
  const { requested_at_ms: _requested, ...rest } = send;
  return { ...rest, message_id: messageId };
}

/**
 * The adoption rule as a table: which event, after which earlier events of its message, stamped how
 * long after its send was asked for, adopts a pending send. Both stores keep it (the memory store in
 * code above, the Redis store in its Lua script); test/messaging/store.test.ts runs every row through
 * both, so neither can drift from it.
 */
export const ADOPTION_RULE: readonly {
  readonly event: MessageStatus | 'button';
  /** Events of the same message seen before it (held, no send matched them). */
  readonly after: readonly MessageStatus[];
  /** Its timestamp less the time its send was asked for, in ms. */
  readonly stampedMs: number;
  readonly adopts: boolean;
}[] = [
  { event: 'sent', after: [], stampedMs: 0, adopts: true },
  { event: 'sent', after: [], stampedMs: 2_000, adopts: true },
  { event: 'sent', after: [], stampedMs: -(CLOCK_SKEW_MS - 1_000), adopts: true },
  { event: 'sent', after: [], stampedMs: -(CLOCK_SKEW_MS + 1_000), adopts: false },
  { event: 'failed', after: [], stampedMs: 0, adopts: true },
  { event: 'failed', after: [], stampedMs: -(CLOCK_SKEW_MS + 1_000), adopts: false },
  { event: 'failed', after: ['delivered'], stampedMs: 0, adopts: false },
  { event: 'delivered', after: [], stampedMs: 0, adopts: false },
  { event: 'read', after: [], stampedMs: 0, adopts: false },
  { event: 'button', after: [], stampedMs: 0, adopts: false },
];
