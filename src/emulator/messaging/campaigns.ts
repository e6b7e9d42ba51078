/**
 * Campaign fan-out: each account's campaigns (chat and RCS) share one lane that sends at most
 * `ratePerSecond` messages in any second. Sends follow a drift-free schedule (slot k at t0 + k/rate,
 * against performance.now(), never a chain of fixed sleeps), and a late timer's catch-up is held back
 * so that the rate-th previous send is always at least a second old. Each recipient is sent exactly
 * once; one timer per busy lane.
 */
import { randomUUID } from 'node:crypto';
import { assertRoom } from './accounts.js';
import { chatMessageId, type Delivery, rcsMessageId } from './delivery.js';
import { ApiError } from './errors.js';
import type { Account, CampaignRecipient, CampaignRecord, MessagingState, SentMessage } from './state.js';
import type { ChatMessage } from './wire.js';

/** The emulator's 64 KB body limit holds ~900 audience rows; campaigns of many thousands are normal. */
export const CAMPAIGN_BODY_LIMIT = 16 * 1024 * 1024;

interface Lane {
  readonly accountId: string;
  /** Campaigns with recipients still to send, in launch order. */
  readonly queue: CampaignRecord[];
  /** Schedule origin (performance.now()) and the next slot's index. */
  t0: number;
  k: number;
  /** Times of the last `rate` sends, oldest first. */
  readonly recent: number[];
  timer: NodeJS.Timeout | undefined;
}

export class FanOut {
  readonly #state: MessagingState;
  readonly #delivery: Delivery;
  readonly #rate: number;
  readonly #intervalMs: number;
  readonly #lanes = new Map<string, Lane>();
  #closed = false;

  constructor(state: MessagingState, delivery: Delivery, ratePerSecond: number) {
    this.#state = state;
    this.#delivery = delivery;
    this.#rate = ratePerSecond;
    this.#intervalMs = 1000 / ratePerSecond;
  }

  /** Recipients still to send across every campaign. */
  get pending(): number {
    let n = 0;
    for (const lane of this.#lanes.values()) for (const c of lane.queue) n += c.recipients.length - c.sent;
    return n;
  }

  /** Queues a launched campaign (its credits and tier room already reserved). */
  launch(c: CampaignRecord): void {
    if (this.#closed) return;
    let lane = this.#lanes.get(c.accountId);
    if (lane === undefined) {
      lane = { accountId: c.accountId, queue: [], t0: 0, k: 0, recent: [], timer: undefined };
      this.#lanes.set(c.accountId, lane);
    }
    const idle = lane.queue.length === 0;
    lane.queue.push(c);
    if (idle) {
      // Restart the schedule now, but never closer than one interval to the last slot used.
      const lastSlot = lane.k === 0 ? Number.NEGATIVE_INFINITY : lane.t0 + (lane.k - 1) * this.#intervalMs;
      lane.t0 = Math.max(performance.now(), lastSlot + this.#intervalMs);
      lane.k = 0;
      this.#tick(lane);
    }
  }

  #tick(lane: Lane): void {
    lane.timer = undefined;
    if (this.#closed) return;
    while (lane.queue.length > 0) {
      const now = performance.now();
      const slot = lane.t0 + lane.k * this.#intervalMs;
      let wait = slot - now;
      if (wait <= 0 && lane.recent.length >= this.#rate) wait = lane.recent[0]! + 1000 - now;
      if (wait > 0) {
        lane.timer = setTimeout(() => this.#tick(lane), Math.ceil(wait));
        lane.timer.unref();
        return;
      }
      const c = lane.queue[0]!;
      this.#sendNext(c, now);
      lane.k++;
      lane.recent.push(now);
      if (lane.recent.length > this.#rate) lane.recent.shift();
      if (c.sent >= c.recipients.length) {
        c.status = 'completed';
        lane.queue.shift();
      }
    }
  }

  #sendNext(c: CampaignRecord, now: number): void {
    const a = this.#state.accounts.get(c.accountId)!;
    const r = c.recipients[c.sent++]!;
    if (a.credits !== null) a.reserved = Math.max(0, a.reserved - 1);
    a.pendingTier = Math.max(0, a.pendingTier - 1);
    let m: SentMessage;
    if (c.channel === 'chat') {
      const message: ChatMessage = {
        type: 'template',
        template: { name: c.templateName, body_params: [...(r.bodyParams ?? [])] },
      };
      m = { id: chatMessageId(), channel: 'chat', accountId: a.id, to: r.to, message, campaignId: c.id };
    } else {
      const t = a.rcsTemplates.get(c.templateName)!;
      m = {
        id: rcsMessageId(),
        channel: 'rcs',
        accountId: a.id,
        to: r.to,
        rcsTemplate: t.template,
        ...(r.params !== undefined ? { params: r.params } : {}),
        campaignId: c.id,
      };
    }
    this.#state.recordSend(a, m, now);
    this.#delivery.track(m);
  }

  close(): void {
    this.#closed = true;
    for (const lane of this.#lanes.values()) if (lane.timer !== undefined) clearTimeout(lane.timer);
    this.#lanes.clear();
  }
}

/**
 * Launches a campaign: its recipients must fit the credits (402) and the tier (429); both are reserved
 * now and charged as each message is sent.
 */
export function launchCampaign(state: MessagingState, fanOut: FanOut, c: CampaignRecord): void {
  const a = state.accounts.get(c.accountId)!;
  const n = c.recipients.length - c.sent;
  assertRoom(state, a, n);
  a.reserved += a.credits === null ? 0 : n;
  a.pendingTier += n;
  c.status = 'launched';
  fanOut.launch(c);
}

/**
 * Saves a new campaign of the account, not yet launched: its name must be new to the account (409) and
 * its recipients must fit the credits (402) and the tier (429).
 */
export function saveCampaign(
  state: MessagingState,
  a: Account,
  o: {
    readonly channel: CampaignRecord['channel'];
    readonly name: string;
    readonly templateName: string;
    readonly recipients: readonly CampaignRecipient[];
  },
): CampaignRecord {
  if (a.campaignNames.has(o.name)) throw new ApiError(409, `campaign ${o.name} already exists`);
  assertRoom(state, a, o.recipients.length);
  const c: CampaignRecord = {
    id: randomUUID(),
    channel: o.channel,
    accountId: a.id,
    name: o.name,
    templateName: o.templateName,
    recipients: o.recipients,
    queuedAt: new Date().toISOString(),
    status: 'saved',
    sent: 0,
  };
  state.campaigns.set(c.id, c);
  a.campaignNames.add(c.name);
  return c;
}
