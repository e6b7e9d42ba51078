/**
 * Message records in memory (one instance), and what every message store shares: the status rank, the
 * bounds, the recipient keys.
 *
 * Records, dedupe keys, pending sends (RCS sends, campaign recipients) and saved campaigns are kept for
 * MESSAGE_RETENTION_MS and, in memory, up to a cap each (oldest out first): a flood of webhook posts or
 * sends cannot grow the process without bound. Events for a message no record matches yet are held
 * ORPHAN_TTL_MS, in case the sender's answer (with the message id) is still on its way when the webhook
 * arrives.
 */
import type { MessageStatus, MessagingEvent } from '../provider/messaging/types.js';
import type {
  CampaignSends,
  MessageRecord,
  MessageStore,
  PendingRcsSend,
  PendingSend,
  SentMessage,
} from './types.js';

/** Events listed per record; later ones still move the status. A button tapped 100 times is enough. */
export const MAX_EVENTS_PER_MESSAGE = 100;
/** How long events for an unknown message wait for the send they belong to be recorded. */
export const ORPHAN_TTL_MS = 60_000;
/** Events held per unknown message. */
export const MAX_ORPHAN_EVENTS = 20;

export interface MemoryMessageLimits {
  /** Records kept (oldest out): 100,000 records of ~1 KB is ~100 MB at worst. */
  readonly maxRecords?: number;
  /** Dedupe keys kept: a message has up to four statuses, plus buttons. */
  readonly maxSeenKeys?: number;
  /** Pending sends kept, and recipients held in saved (unlaunched) campaigns. */
  readonly maxPending?: number;
  readonly maxOrphans?: number;
  /** The clock (ms since the epoch), for tests. */
  readonly now?: () => number;
}

const RANK: Readonly<Record<MessageStatus, number>> = { sent: 1, delivered: 2, read: 3, failed: 4 };

/** The status after `event`: the higher rank of the two; failed wins and stays. */
export function nextStatus(current: MessageStatus, event: MessagingEvent): MessageStatus {
  if (event.kind !== 'status' || current === 'failed') return current;
  return RANK[event.status] > RANK[current] ? event.status : current;
}

/** The RCS recipient key: the number's last 10 digits (the launcher's `mobile`); undefined under 10. */
export function rcsMobile(number: string): string | undefined {
  const digits = number.replace(/\D/g, '');
  return digits.length >= 10 ? digits.slice(-10) : undefined;
}

/** The number an event is about: the recipient of a status, the tapping number of a button. */
export function eventNumber(event: MessagingEvent): string {
  return event.kind === 'status' ? event.recipient : event.from;
}

/**
 * The recipient a pending send and an event are matched by: chat the number's digits, RCS its last 10;
 * undefined when there are none.
 */
export function recipientOf(channel: 'chat' | 'rcs', number: string): string | undefined {
  if (channel === 'rcs') return rcsMobile(number);
  const digits = number.replace(/\D/g, '');
  return digits === '' ? undefined : digits;
}

/** The pending sends of one campaign, one per recipient (kind `campaign`). */
export function campaignSends(c: CampaignSends): PendingSend[] {
  return c.recipients.map((to) => ({
    tenant: c.tenant,
    channel: c.channel,
    to,
    kind: 'campaign',
    sent_at: c.sent_at,
    campaign_id: c.campaign_id,
    requested_at_ms: c.requested_at_ms,
  }));
}

interface HeldRecord {
  sent: SentMessage;
  status: MessageStatus;
  events: MessagingEvent[];
  expiresAt: number;
}

interface Pending {
  readonly send: PendingSend;
  /** `channel:recipient`. */
  readonly key: string;
  readonly expiresAt: number;
}

interface Orphan {
  readonly events: MessagingEvent[];
  /** `channel:recipient`, when the event names one. */
  readonly key: string | undefined;
  readonly firstAt: number;
  readonly expiresAt: number;
}

interface Saved {
  readonly campaign: CampaignSends;
  readonly expiresAt: number;
}

const keyOf = (channel: 'chat' | 'rcs', recipient: string) => `${channel}:${recipient}`;

function eventKey(event: MessagingEvent): string | undefined {
  const r = recipientOf(event.channel, eventNumber(event));
  return r === undefined ? undefined : keyOf(event.channel, r);
}

export class MemoryMessageStore implements MessageStore {
  readonly #retentionMs: number;
  readonly #maxRecords: number;
  readonly #maxSeen: number;
  readonly #maxPending: number;
  readonly #maxOrphans: number;
  readonly #now: () => number;
  /** In insertion order, which is expiry order (one retention for all). */
  readonly #records = new Map<string, HeldRecord>();
  readonly #seen = new Map<string, number>();
  /** Pending sends in insertion order, and each `channel:recipient`'s keys into it, oldest first. */
  readonly #pending = new Map<number, Pending>();
  readonly #pendingByKey = new Map<string, number[]>();
  #pendingSeq = 0;
  /** Orphans in arrival order, and each `channel:recipient`'s message ids, oldest first. */
  readonly #orphans = new Map<string, Orphan>();
  readonly #orphansByKey = new Map<string, string[]>();
  /** Saved campaigns by id, in insertion order, and the recipients they hold. */
  readonly #saved = new Map<string, Saved>();
  #savedRecipients = 0;

  constructor(retentionMs: number, limits: MemoryMessageLimits = {}) {
    this.#retentionMs = retentionMs;
    this.#maxRecords = limits.maxRecords ?? 100_000;
    this.#maxSeen = limits.maxSeenKeys ?? 500_000;
    this.#maxPending = limits.maxPending ?? 10_000;
    this.#maxOrphans = limits.maxOrphans ?? 10_000;
    this.#now = limits.now ?? Date.now;
  }

  /** Records held now (for tests and the cap). */
  get size(): number {
    return this.#records.size;
  }

  async recordSent(message: SentMessage): Promise<MessageRecord> {
    const now = this.#now();
    this.#sweep(now);
    const existing = this.#records.get(message.message_id);
    if (existing !== undefined) {
      if (existing.sent.kind === 'campaign' && message.kind !== 'campaign') {
        // A campaign's pending send to the same number took this message's first event before the
        // sender's answer named it: the message is this send's, and the campaign's send waits again.
        this.#requeue(existing.sent, existing.expiresAt);
        existing.sent = message;
      }
      return view(existing);
    }
    const held = this.#insert(message, now + this.#retentionMs);
    const orphan = this.#orphans.get(message.message_id);
    if (orphan !== undefined && orphan.expiresAt > now) {
      this.#dropOrphan(message.message_id);
      for (const ev of orphan.events) append(held, ev);
    }
    return view(held);
  }

  async recordPendingRcs(send: PendingRcsSend): Promise<MessageRecord | undefined> {
    const now = this.#now();
    this.#sweep(now);
    return this.#recordPending({ ...send, channel: 'rcs' }, now);
  }

  async recordCampaign(campaign: CampaignSends): Promise<MessageRecord[]> {
    const now = this.#now();
    this.#sweep(now);
    const adoptedNow: MessageRecord[] = [];
    for (const send of campaignSends(campaign)) {
      const record = this.#recordPending(send, now);
      if (record !== undefined) adoptedNow.push(record);
    }
    return adoptedNow;
  }

  async saveCampaign(campaign: CampaignSends): Promise<void> {
    const now = this.#now();
    this.#sweep(now);
    this.#dropSaved(campaign.campaign_id);
    this.#saved.set(campaign.campaign_id, { campaign, expiresAt: now + this.#retentionMs });
    this.#savedRecipients += campaign.recipients.length;
    while (this.#savedRecipients > this.#maxPending && this.#saved.size > 0) {
      this.#dropSaved(this.#saved.keys().next().value as string);
    }
  }

  async launchSavedCampaign(
    campaignId: string,
    requestedAtMs: number,
    sentAt: string,
  ): Promise<MessageRecord[] | undefined> {
    const now = this.#now();
    this.#sweep(now);
    const saved = this.#saved.get(campaignId);
    if (saved === undefined) return undefined;
    this.#dropSaved(campaignId);
    return this.recordCampaign({ ...saved.campaign, requested_at_ms: requestedAtMs, sent_at: sentAt });
  }

  async addEvent(event: MessagingEvent): Promise<MessageRecord | undefined> {
    const now = this.#now();
    this.#sweep(now);
    let held = this.#records.get(event.message_id);
    if (held === undefined) {
      const key = eventKey(event);
      const send = key === undefined ? undefined : this.#takePending(key, now);
      if (send !== undefined) held = this.#insert(adopted(send, event.message_id), now + this.#retentionMs);
    }
    if (held === undefined) {
      this.#holdOrphan(event, now);
      return undefined;
    }
    append(held, event);
    return view(held);
  }

  async get(tenant: string, messageId: string): Promise<MessageRecord | undefined> {
    const held = this.#records.get(messageId);
    if (held === undefined || held.sent.tenant !== tenant || held.expiresAt <= this.#now()) return undefined;
    return view(held);
  }

  async markSeen(key: string): Promise<boolean> {
    const now = this.#now();
    const at = this.#seen.get(key);
    if (at !== undefined && at > now) return false;
    this.#seen.delete(key);
    this.#seen.set(key, now + this.#retentionMs);
    // Oldest out, expired or past the cap.
    for (const [k, exp] of this.#seen) {
      if (exp > now && this.#seen.size <= this.#maxSeen) break;
      this.#seen.delete(k);
    }
    return true;
  }

  #insert(sent: SentMessage, expiresAt: number): HeldRecord {
    const held: HeldRecord = { sent, status: 'sent', events: [], expiresAt };
    this.#records.set(sent.message_id, held);
    while (this.#records.size > this.#maxRecords) {
      const oldest = this.#records.keys().next().value as string;
      this.#records.delete(oldest);
    }
    return held;
  }

  /** A pending send, adopting at once the oldest event for its recipient that came after its launch. */
  #recordPending(send: PendingSend, now: number): MessageRecord | undefined {
    const key = keyOf(send.channel, send.to);
    for (const id of this.#orphansByKey.get(key) ?? []) {
      const orphan = this.#orphans.get(id)!;
      if (orphan.firstAt < send.requested_at_ms || this.#records.has(id)) continue;
      this.#dropOrphan(id);
      const held = this.#insert(adopted(send, id), now + this.#retentionMs);
      for (const ev of orphan.events) append(held, ev);
      return view(held);
    }
    const seq = ++this.#pendingSeq;
    this.#pending.set(seq, { send, key, expiresAt: now + this.#retentionMs });
    const list = this.#pendingByKey.get(key);
    if (list === undefined) this.#pendingByKey.set(key, [seq]);
    else list.push(seq);
    while (this.#pending.size > this.#maxPending) this.#dropOldestPending();
    return undefined;
  }

  /** A campaign send given back its place at the head of its recipient's queue. */
  #requeue(sent: SentMessage, expiresAt: number): void {
    const { message_id: _id, ...rest } = sent;
    const send: PendingSend = {
      ...rest,
      campaign_id: sent.campaign_id ?? '',
      requested_at_ms: Date.parse(sent.sent_at),
    };
    const key = keyOf(send.channel, send.to);
    const seq = ++this.#pendingSeq;
    this.#pending.set(seq, { send, key, expiresAt });
    const list = this.#pendingByKey.get(key);
    if (list === undefined) this.#pendingByKey.set(key, [seq]);
    else list.unshift(seq);
    while (this.#pending.size > this.#maxPending) this.#dropOldestPending();
  }

  #takePending(key: string, now: number): PendingSend | undefined {
    const list = this.#pendingByKey.get(key);
    while (list !== undefined && list.length > 0) {
      const seq = list.shift()!;
      const p = this.#pending.get(seq);
      this.#pending.delete(seq);
      if (list.length === 0) this.#pendingByKey.delete(key);
      if (p !== undefined && p.expiresAt > now) return p.send;
    }
    return undefined;
  }

  #dropOldestPending(): void {
    const [seq, p] = this.#pending.entries().next().value as [number, Pending];
    this.#pending.delete(seq);
    const list = this.#pendingByKey.get(p.key);
    if (list === undefined) return;
    const i = list.indexOf(seq);
    if (i !== -1) list.splice(i, 1);
    if (list.length === 0) this.#pendingByKey.delete(p.key);
  }

  #dropSaved(campaignId: string): void {
    const saved = this.#saved.get(campaignId);
    if (saved === undefined) return;
    this.#saved.delete(campaignId);
    this.#savedRecipients -= saved.campaign.recipients.length;
  }

  #holdOrphan(event: MessagingEvent, now: number): void {
    const orphan = this.#orphans.get(event.message_id);
    if (orphan !== undefined && orphan.expiresAt > now) {
      if (orphan.events.length < MAX_ORPHAN_EVENTS) orphan.events.push(event);
      return;
    }
    this.#dropOrphan(event.message_id);
    const key = eventKey(event);
    this.#orphans.set(event.message_id, {
      events: [event],
      key,
      firstAt: now,
      expiresAt: now + ORPHAN_TTL_MS,
    });
    if (key !== undefined) {
      const ids = this.#orphansByKey.get(key);
      if (ids === undefined) this.#orphansByKey.set(key, [event.message_id]);
      else ids.push(event.message_id);
    }
    while (this.#orphans.size > this.#maxOrphans) {
      this.#dropOrphan(this.#orphans.keys().next().value as string);
    }
  }

  #dropOrphan(id: string): void {
    const orphan = this.#orphans.get(id);
    if (orphan === undefined) return;
    this.#orphans.delete(id);
    if (orphan.key === undefined) return;
    const ids = this.#orphansByKey.get(orphan.key);
    if (ids === undefined) return;
    const i = ids.indexOf(id);
    if (i !== -1) ids.splice(i, 1);
    if (ids.length === 0) this.#orphansByKey.delete(orphan.key);
  }

  /** Drops what has expired, oldest first (each map is in expiry order). */
  #sweep(now: number): void {
    for (const [id, held] of this.#records) {
      if (held.expiresAt > now) break;
      this.#records.delete(id);
    }
    for (const [id, orphan] of this.#orphans) {
      if (orphan.expiresAt > now) break;
      this.#dropOrphan(id);
    }
    for (const p of this.#pending.values()) {
      if (p.expiresAt > now) break;
      this.#dropOldestPending();
    }
    for (const [id, saved] of this.#saved) {
      if (saved.expiresAt > now) break;
      this.#dropSaved(id);
    }
  }
}

function append(held: HeldRecord, event: MessagingEvent): void {
  if (held.events.length < MAX_EVENTS_PER_MESSAGE) held.events.push(event);
  held.status = nextStatus(held.status, event);
}

/** The record of a pending send once its message id is known. */
export function adopted(send: PendingSend, messageId: string): SentMessage {
  const { requested_at_ms: _requested, ...rest } = send;
  return { ...rest, message_id: messageId };
}

function view(held: HeldRecord): MessageRecord {
  return { ...held.sent, status: held.status, events: [...held.events] };
}
