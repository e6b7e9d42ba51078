/**
 * Message records in memory (one instance), by the rules every message store shares (rules.ts).
 *
 * Records, dedupe keys and saved campaigns are kept for MESSAGE_RETENTION_MS and up to a cap each (oldest
 * out first): a flood of webhook posts or sends cannot grow the process without bound.
 */

import type {
  CampaignOutcome,
  CampaignSends,
  EventOutcome,
  MessageRecord,
  MessageStore,
  PendingRcsSend,
  PendingSend,
  SentMessage,
} from './records.js';
import {
  adopted,
  CLOCK_SKEW_MS,
  campaignSends,
  DEFAULT_MAX_PENDING,
  dedupeKey,
  earlierStatusKeys,
  firstEventTime,
  MAX_CAMPAIGN_RECIPIENTS,
  MAX_EVENTS_PER_MESSAGE,
  MAX_ORPHAN_EVENTS,
  nextStatus,
  ORPHAN_TTL_MS,
  PENDING_TTL_MS,
  pendingTtlMs,
  reservationId,
} from './rules.js';
import type { MessageStatus, MessagingEvent } from './types.js';

export interface MemoryMessageLimits {
  /** Records kept (oldest out): 100,000 records of ~1 KB is ~100 MB at worst. */
  readonly maxRecords?: number;
  /** Dedupe keys kept: a message has up to four statuses, plus buttons. */
  readonly maxSeenKeys?: number;
  /**
   * Pending sends kept, and recipients held in saved (unlaunched) campaigns: campaigns' sends go out
   * first, a call's only to make room for another call's.
   */
  readonly maxPending?: number;
  /** Recipients a campaign may have (MAX_CAMPAIGN_RECIPIENTS). */
  readonly maxCampaignRecipients?: number;
  readonly maxOrphans?: number;
  /** The clock (ms since the epoch), for tests. */
  readonly now?: () => number;
}

interface HeldRecord {
  sent: SentMessage;
  status: MessageStatus;
  events: MessagingEvent[];
  expiresAt: number;
  /** A pending send's record: when its launch was asked for (a campaign's send requeued keeps it). */
  requestedAtMs?: number;
}

interface Pending {
  readonly send: PendingSend;
  /** `channel:recipient`. */
  readonly key: string;
  readonly expiresAt: number;
}

interface Orphan {
  readonly events: MessagingEvent[];
  /**
   * Set once the message's first event (`sent`) is held: the `channel:recipient` a pending send may
   * adopt it by, the event's time (the provider's clock) and when it arrived (ours).
   */
  first?: { readonly key: string; readonly sentAt: number; readonly arrivedAt: number };
  readonly expiresAt: number;
}

interface Saved {
  readonly campaign: CampaignSends;
  readonly expiresAt: number;
}

interface Reservation {
  readonly id: string;
  readonly expiresAt: number;
}

const keyOf = (channel: 'chat' | 'rcs', recipient: string) => `${channel}:${recipient}`;

export class MemoryMessageStore implements MessageStore {
  readonly maxCampaignRecipients: number;
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
  /** Orphans in arrival order, and each `channel:recipient`'s first events held, oldest first. */
  readonly #orphans = new Map<string, Orphan>();
  readonly #orphansByKey = new Map<string, string[]>();
  /** Saved campaigns by id, in insertion order, and the recipients they hold. */
  readonly #saved = new Map<string, Saved>();
  #savedRecipients = 0;
  /** RCS recipients reserved for a call's send being launched, by mobile. */
  readonly #reserved = new Map<string, Reservation>();

  constructor(retentionMs: number, limits: MemoryMessageLimits = {}) {
    this.#retentionMs = retentionMs;
    this.#maxRecords = limits.maxRecords ?? 100_000;
    this.#maxSeen = limits.maxSeenKeys ?? 500_000;
    this.#maxPending = limits.maxPending ?? DEFAULT_MAX_PENDING;
    this.maxCampaignRecipients = limits.maxCampaignRecipients ?? MAX_CAMPAIGN_RECIPIENTS;
    this.#maxOrphans = limits.maxOrphans ?? 10_000;
    this.#now = limits.now ?? (() => Date.now());
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
        // sender's answer named it: the message is this send's, and the campaign's send waits again
        // (or takes its own message's first event, held meanwhile).
        const campaignSent = existing.sent;
        const requestedAtMs = existing.requestedAtMs ?? now;
        existing.sent = message;
        existing.requestedAtMs = undefined;
        this.#requeue(campaignSent, requestedAtMs, now);
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

  async reserveRcs(mobile: string): Promise<string | undefined> {
    const now = this.#now();
    this.#sweep(now);
    const held = this.#reserved.get(mobile);
    if (held !== undefined && held.expiresAt > now) return undefined;
    for (const seq of this.#pendingByKey.get(keyOf('rcs', mobile)) ?? []) {
      const p = this.#pending.get(seq);
      if (p !== undefined && p.expiresAt > now) return undefined;
    }
    const id = reservationId();
    this.#reserved.set(mobile, { id, expiresAt: now + PENDING_TTL_MS });
    return id;
  }

  async releaseRcs(mobile: string, reservation: string): Promise<void> {
    if (this.#reserved.get(mobile)?.id === reservation) this.#reserved.delete(mobile);
  }

  async recordPendingRcs(send: PendingRcsSend, reservation?: string): Promise<MessageRecord | undefined> {
    const now = this.#now();
    this.#sweep(now);
    if (reservation !== undefined) await this.releaseRcs(send.to, reservation);
    return this.#recordPending({ ...send, channel: 'rcs' }, now, now + PENDING_TTL_MS);
  }

  async recordCampaign(campaign: CampaignSends): Promise<CampaignOutcome> {
    const now = this.#now();
    this.#sweep(now);
    const expiresAt = now + pendingTtlMs(campaign.recipients.length);
    const adoptedNow: MessageRecord[] = [];
    let skipped = 0;
    for (const send of campaignSends(campaign)) {
      if (send.channel === 'rcs' && this.#heldForCall(send.to, now)) {
        skipped++;
        continue;
      }
      const record = this.#recordPending(send, now, expiresAt);
      if (record !== undefined) adoptedNow.push(record);
    }
    return { adopted: adoptedNow, skipped };
  }

  /** True while a call's RCS send to `mobile` is being launched (reserved) or waits for its first event. */
  #heldForCall(mobile: string, now: number): boolean {
    const r = this.#reserved.get(mobile);
    if (r !== undefined && r.expiresAt > now) return true;
    for (const seq of this.#pendingByKey.get(keyOf('rcs', mobile)) ?? []) {
      const p = this.#pending.get(seq);
      if (p !== undefined && p.expiresAt > now && p.send.kind !== 'campaign') return true;
    }
    return false;
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
  ): Promise<CampaignOutcome | undefined> {
    const now = this.#now();
    this.#sweep(now);
    const saved = this.#saved.get(campaignId);
    if (saved === undefined) return undefined;
    this.#dropSaved(campaignId);
    return this.recordCampaign({ ...saved.campaign, requested_at_ms: requestedAtMs, sent_at: sentAt });
  }

  async addEvent(event: MessagingEvent, recipient: string | undefined): Promise<EventOutcome> {
    const now = this.#now();
    this.#sweep(now);
    if (!this.#markSeen(dedupeKey(event), now)) return { fresh: false, record: undefined, added: [] };
    const added: MessagingEvent[] = [];
    let held = this.#records.get(event.message_id);
    let sentAt = firstEventTime(event);
    if (sentAt !== undefined && event.kind === 'status' && event.status === 'failed') {
      // A failed is a first event only when nothing else of its message came before it.
      const orphan = this.#orphans.get(event.message_id);
      const seenBefore =
        (orphan !== undefined && orphan.expiresAt > now && orphan.events.length > 0) ||
        earlierStatusKeys(event).some((k) => (this.#seen.get(k) ?? 0) > now);
      if (seenBefore) sentAt = undefined;
    }
    if (held === undefined && recipient !== undefined && sentAt !== undefined) {
      const send = this.#takePending(keyOf(event.channel, recipient), now, sentAt);
      if (send !== undefined) {
        held = this.#insert(adopted(send, event.message_id), now + this.#retentionMs, send.requested_at_ms);
        // The message's later events that came first (a post retried, posts overtaking) join it.
        const orphan = this.#orphans.get(event.message_id);
        if (orphan !== undefined) {
          this.#dropOrphan(event.message_id);
          for (const ev of orphan.events) {
            append(held, ev);
            added.push(ev);
          }
        }
      }
    }
    if (held === undefined) {
      this.#holdOrphan(event, recipient, sentAt, now);
      return { fresh: true, record: undefined, added: [] };
    }
    append(held, event);
    added.push(event);
    return { fresh: true, record: view(held), added };
  }

  async get(tenant: string, messageId: string): Promise<MessageRecord | undefined> {
    const held = this.#records.get(messageId);
    if (held === undefined || held.sent.tenant !== tenant || held.expiresAt <= this.#now()) return undefined;
    return view(held);
  }

  /** True the first time `key` is seen within the retention, and it is then marked. */
  #markSeen(key: string, now: number): boolean {
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

  #insert(sent: SentMessage, expiresAt: number, requestedAtMs?: number): HeldRecord {
    const held: HeldRecord = { sent, status: 'sent', events: [], expiresAt };
    if (requestedAtMs !== undefined) held.requestedAtMs = requestedAtMs;
    this.#records.set(sent.message_id, held);
    while (this.#records.size > this.#maxRecords) {
      const oldest = this.#records.keys().next().value as string;
      this.#records.delete(oldest);
    }
    return held;
  }

  /**
   * A pending send, adopting at once the oldest first event held for its recipient that was sent and
   * arrived after its launch was asked for.
   */
  #recordPending(
    send: PendingSend,
    now: number,
    expiresAt: number,
    first = false,
  ): MessageRecord | undefined {
    const key = keyOf(send.channel, send.to);
    const since = send.requested_at_ms - CLOCK_SKEW_MS;
    for (const id of this.#orphansByKey.get(key) ?? []) {
      const orphan = this.#orphans.get(id)!;
      const first = orphan.first!;
      if (first.arrivedAt < since || first.sentAt < since || this.#records.has(id)) continue;
      this.#dropOrphan(id);
      const held = this.#insert(adopted(send, id), now + this.#retentionMs, send.requested_at_ms);
      for (const ev of orphan.events) append(held, ev);
      return view(held);
    }
    this.#enqueue(send, key, expiresAt, first);
    return undefined;
  }

  /**
   * A campaign send given back: it adopts its own message's first event if one is held (as when it was
   * first recorded, by the time its launch was asked for), else it waits at the head of its recipient's
   * queue.
   */
  #requeue(sent: SentMessage, requestedAtMs: number, now: number): void {
    const { message_id: _id, ...rest } = sent;
    const send: PendingSend = {
      ...rest,
      campaign_id: sent.campaign_id ?? '',
      requested_at_ms: requestedAtMs,
    };
    this.#recordPending(send, now, now + PENDING_TTL_MS, true);
  }

  #enqueue(send: PendingSend, key: string, expiresAt: number, first: boolean): void {
    const seq = ++this.#pendingSeq;
    this.#pending.set(seq, { send, key, expiresAt });
    const list = this.#pendingByKey.get(key);
    if (list === undefined) this.#pendingByKey.set(key, [seq]);
    else if (first) list.unshift(seq);
    else list.push(seq);
    while (this.#pending.size > this.#maxPending) this.#dropForRoom();
  }

  /** Drops the oldest campaign send; a call's send (the oldest) only when no campaign's is held. */
  #dropForRoom(): void {
    for (const [seq, p] of this.#pending) {
      if (p.send.kind === 'campaign') {
        this.#dropPending(seq, p);
        return;
      }
    }
    this.#dropOldestPending();
  }

  /** The oldest live send to `key` asked for no later than `sentAt` (less the skew), taken; expired ones dropped. */
  #takePending(key: string, now: number, sentAt: number): PendingSend | undefined {
    const list = this.#pendingByKey.get(key);
    if (list === undefined) return undefined;
    let taken: PendingSend | undefined;
    for (let i = 0; i < list.length && taken === undefined; ) {
      const seq = list[i]!;
      const p = this.#pending.get(seq);
      const live = p !== undefined && p.expiresAt > now;
      if (live && p.send.requested_at_ms - CLOCK_SKEW_MS > sentAt) {
        i++;
        continue;
      }
      list.splice(i, 1);
      this.#pending.delete(seq);
      if (live) taken = p.send;
    }
    if (list.length === 0) this.#pendingByKey.delete(key);
    return taken;
  }

  #dropOldestPending(): void {
    const [seq, p] = this.#pending.entries().next().value as [number, Pending];
    this.#dropPending(seq, p);
  }

  #dropPending(seq: number, p: Pending): void {
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

  #holdOrphan(
    event: MessagingEvent,
    recipient: string | undefined,
    sentAt: number | undefined,
    now: number,
  ): void {
    let orphan = this.#orphans.get(event.message_id);
    if (orphan === undefined || orphan.expiresAt <= now) {
      this.#dropOrphan(event.message_id);
      orphan = { events: [], expiresAt: now + ORPHAN_TTL_MS };
      this.#orphans.set(event.message_id, orphan);
      while (this.#orphans.size > this.#maxOrphans) {
        this.#dropOrphan(this.#orphans.keys().next().value as string);
      }
    }
    if (orphan.events.length < MAX_ORPHAN_EVENTS) orphan.events.push(event);
    if (orphan.first === undefined && recipient !== undefined && sentAt !== undefined) {
      const key = keyOf(event.channel, recipient);
      orphan.first = { key, sentAt, arrivedAt: now };
      const ids = this.#orphansByKey.get(key);
      if (ids === undefined) this.#orphansByKey.set(key, [event.message_id]);
      else ids.push(event.message_id);
    }
  }

  #dropOrphan(id: string): void {
    const orphan = this.#orphans.get(id);
    if (orphan === undefined) return;
    this.#orphans.delete(id);
    if (orphan.first === undefined) return;
    const ids = this.#orphansByKey.get(orphan.first.key);
    if (ids === undefined) return;
    const i = ids.indexOf(id);
    if (i !== -1) ids.splice(i, 1);
    if (ids.length === 0) this.#orphansByKey.delete(orphan.first.key);
  }

  /** Drops what has expired, oldest first (records, orphans and saved campaigns are in expiry order). */
  #sweep(now: number): void {
    for (const [id, held] of this.#records) {
      if (held.expiresAt > now) break;
      this.#records.delete(id);
    }
    for (const [id, orphan] of this.#orphans) {
      if (orphan.expiresAt > now) break;
      this.#dropOrphan(id);
    }
    // Pending sends wait PENDING_TTL_MS, a campaign's longer: not quite in expiry order, so an expired
    // one behind a live one waits for #takePending or the cap.
    for (const p of this.#pending.values()) {
      if (p.expiresAt > now) break;
      this.#dropOldestPending();
    }
    for (const [id, saved] of this.#saved) {
      if (saved.expiresAt > now) break;
      this.#dropSaved(id);
    }
    for (const [mobile, r] of this.#reserved) {
      if (r.expiresAt <= now) this.#reserved.delete(mobile);
    }
  }
}

function append(held: HeldRecord, event: MessagingEvent): void {
  if (held.events.length < MAX_EVENTS_PER_MESSAGE) held.events.push(event);
  held.status = nextStatus(held.status, event);
}

function view(held: HeldRecord): MessageRecord {
  return { ...held.sent, status: held.status, events: [...held.events] };
}
