/**
 * Message records in memory (one instance), and what every message store shares: the status rank, the
 * bounds, the RCS recipient key.
 *
 * Records, dedupe keys and pending RCS sends are kept for MESSAGE_RETENTION_MS and, in memory, up to a
 * cap each (oldest out first): a flood of webhook posts or sends cannot grow the process without bound.
 * Events for a message no record matches yet are held ORPHAN_TTL_MS, in case the sender's answer (with
 * the message id) is still on its way when the webhook arrives.
 */
import type { MessageStatus, MessagingEvent } from '../provider/messaging/types.js';
import type { MessageRecord, MessageStore, PendingRcsSend, SentMessage } from './types.js';

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

interface HeldRecord {
  sent: SentMessage;
  status: MessageStatus;
  events: MessagingEvent[];
  expiresAt: number;
}

interface Pending {
  readonly send: PendingRcsSend;
  readonly expiresAt: number;
}

interface Orphan {
  readonly events: MessagingEvent[];
  readonly channel: 'chat' | 'rcs';
  readonly mobile: string | undefined;
  readonly firstAt: number;
  readonly expiresAt: number;
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
  /** Pending RCS sends in insertion order, and each recipient's keys into it, oldest first. */
  readonly #pending = new Map<number, Pending>();
  readonly #pendingByMobile = new Map<string, number[]>();
  #pendingSeq = 0;
  readonly #orphans = new Map<string, Orphan>();

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
    if (existing !== undefined) return view(existing);
    const held = this.#insert(message, now + this.#retentionMs);
    const orphan = this.#orphans.get(message.message_id);
    if (orphan !== undefined && orphan.expiresAt > now) {
      this.#orphans.delete(message.message_id);
      for (const ev of orphan.events) append(held, ev);
    }
    return view(held);
  }

  async recordPendingRcs(send: PendingRcsSend): Promise<MessageRecord | undefined> {
    const now = this.#now();
    this.#sweep(now);
    // An event for this recipient may have come first: the oldest one that arrived after the launch.
    for (const [id, orphan] of this.#orphans) {
      if (orphan.channel !== 'rcs' || orphan.mobile !== send.to || orphan.firstAt < send.requested_at_ms)
        continue;
      if (this.#records.has(id)) continue;
      this.#orphans.delete(id);
      const held = this.#insert(adopted(send, id), now + this.#retentionMs);
      for (const ev of orphan.events) append(held, ev);
      return view(held);
    }
    const seq = ++this.#pendingSeq;
    this.#pending.set(seq, { send, expiresAt: now + this.#retentionMs });
    const list = this.#pendingByMobile.get(send.to);
    if (list === undefined) this.#pendingByMobile.set(send.to, [seq]);
    else list.push(seq);
    while (this.#pending.size > this.#maxPending) this.#dropOldestPending();
    return undefined;
  }

  async addEvent(event: MessagingEvent): Promise<MessageRecord | undefined> {
    const now = this.#now();
    this.#sweep(now);
    let held = this.#records.get(event.message_id);
    if (held === undefined && event.channel === 'rcs') {
      const mobile = rcsMobile(eventNumber(event));
      const send = mobile === undefined ? undefined : this.#takePending(mobile, now);
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

  #takePending(mobile: string, now: number): PendingRcsSend | undefined {
    const list = this.#pendingByMobile.get(mobile);
    while (list !== undefined && list.length > 0) {
      const seq = list.shift()!;
      const p = this.#pending.get(seq);
      this.#pending.delete(seq);
      if (list.length === 0) this.#pendingByMobile.delete(mobile);
      if (p !== undefined && p.expiresAt > now) return p.send;
    }
    return undefined;
  }

  #dropOldestPending(): void {
    const [seq, p] = this.#pending.entries().next().value as [number, Pending];
    this.#pending.delete(seq);
    const list = this.#pendingByMobile.get(p.send.to);
    if (list === undefined) return;
    const i = list.indexOf(seq);
    if (i !== -1) list.splice(i, 1);
    if (list.length === 0) this.#pendingByMobile.delete(p.send.to);
  }

  #holdOrphan(event: MessagingEvent, now: number): void {
    const orphan = this.#orphans.get(event.message_id);
    if (orphan !== undefined && orphan.expiresAt > now) {
      if (orphan.events.length < MAX_ORPHAN_EVENTS) orphan.events.push(event);
      return;
    }
    this.#orphans.delete(event.message_id);
    this.#orphans.set(event.message_id, {
      events: [event],
      channel: event.channel,
      mobile: event.channel === 'rcs' ? rcsMobile(eventNumber(event)) : undefined,
      firstAt: now,
      expiresAt: now + ORPHAN_TTL_MS,
    });
    while (this.#orphans.size > this.#maxOrphans) {
      this.#orphans.delete(this.#orphans.keys().next().value as string);
    }
  }

  /** Drops what has expired, oldest first (each map is in expiry order). */
  #sweep(now: number): void {
    for (const [id, held] of this.#records) {
      if (held.expiresAt > now) break;
      this.#records.delete(id);
    }
    for (const [id, orphan] of this.#orphans) {
      if (orphan.expiresAt > now) break;
      this.#orphans.delete(id);
    }
    for (const p of this.#pending.values()) {
      if (p.expiresAt > now) break;
      this.#dropOldestPending();
    }
  }
}

function append(held: HeldRecord, event: MessagingEvent): void {
  if (held.events.length < MAX_EVENTS_PER_MESSAGE) held.events.push(event);
  held.status = nextStatus(held.status, event);
}

/** The record of a pending RCS send once its message id is known. */
export function adopted(send: PendingRcsSend, messageId: string): SentMessage {
  const { requested_at_ms: _requested, ...rest } = send;
  return { ...rest, message_id: messageId, channel: 'rcs' };
}

function view(held: HeldRecord): MessageRecord {
  return { ...held.sent, status: held.status, events: [...held.events] };
}
