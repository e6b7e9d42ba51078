/**
 * What happens to a message after it is sent: `sent` at once, `delivered` after `deliveryDelayMs`,
 * `read` after `readDelayMs` more (unless read receipts are off), or `failed` for a number marked
 * undeliverable; and button taps. Each becomes a webhook post in the shape of its API: chat posts
 * `ChatWebhookPayload`, RCS posts `RcsDeliveryStatusEvent` and `RcsButtonClickEvent`.
 */
import { randomBytes } from 'node:crypto';
import { ApiError, badRequest } from './errors.js';
import type { Account, MessagingState, SentMessage } from './state.js';
import type { WebhookPoster } from './webhooks.js';
import type {
  ChatInboundItem,
  ChatStatusItem,
  ChatWebhookPayload,
  MessageStatus,
  RcsButtonClickEvent,
  RcsDeliveryStatusEvent,
  RcsSuggestion,
} from './wire.js';

export interface DeliveryOptions {
  readonly deliveryDelayMs: number;
  /** Negative: read receipts are never sent. */
  readonly readDelayMs: number;
}

export const chatMessageId = (): string => `wamid.${randomBytes(18).toString('base64url')}`;
export const rcsMessageId = (): string => `rcs.${randomBytes(18).toString('base64url')}`;

const iso = (ms = Date.now()): string => new Date(ms).toISOString();

/** `{{name}}` replaced by the contact's value (left as is without one). */
const render = (s: string | undefined, params: Readonly<Record<string, string>> | undefined) =>
  s === undefined || params === undefined
    ? s
    : s.replace(/\{\{([A-Za-z0-9_]+)\}\}/g, (all, k) => params[k] ?? all);

export function chatPayload(value: {
  statuses?: ChatStatusItem[];
  messages?: ChatInboundItem[];
}): ChatWebhookPayload {
  return { object: 'chat', entry: [{ changes: [{ field: 'messages', value }] }] };
}

export class Delivery {
  readonly #state: MessagingState;
  readonly #hooks: WebhookPoster;
  readonly #o: DeliveryOptions;
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(state: MessagingState, hooks: WebhookPoster, o: DeliveryOptions) {
    this.#state = state;
    this.#hooks = hooks;
    this.#o = o;
  }

  /** Timers still to fire (status posts not yet made). */
  get pending(): number {
    return this.#timers.size;
  }

  #after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.#timers.add(t);
  }

  /** Starts the status sequence of a message just sent. */
  track(m: SentMessage): void {
    const sentAt = Date.now();
    this.#status(m, 'sent', sentAt);
    if (this.#state.undeliverable.has(m.to)) {
      this.#after(this.#o.deliveryDelayMs, () => this.#status(m, 'failed', sentAt));
      return;
    }
    this.#after(this.#o.deliveryDelayMs, () => {
      const deliveredAt = Date.now();
      this.#status(m, 'delivered', sentAt, deliveredAt);
      if (this.#o.readDelayMs >= 0) {
        this.#after(this.#o.readDelayMs, () => this.#status(m, 'read', sentAt, deliveredAt));
      }
    });
  }

  #status(m: SentMessage, status: MessageStatus, sentAt: number, deliveredAt?: number): void {
    const now = Date.now();
    if (m.channel === 'chat') {
      const item: ChatStatusItem = {
        id: m.id,
        status,
        timestamp: iso(now),
        recipient_id: m.to,
        ...(status === 'failed' ? { errors: [{ code: 131026, title: 'Message undeliverable' }] } : {}),
      };
      this.#hooks.post(chatPayload({ statuses: [item] }));
      return;
    }
    const event: RcsDeliveryStatusEvent = {
      event_type: 'delivery_status',
      timestamp: iso(now),
      message_id: m.id,
      bot_id: m.rcsTemplate?.bot_name ?? '',
      recipient: m.to,
      status,
      status_details: {
        sent_at: iso(sentAt),
        ...(deliveredAt !== undefined ? { delivered_at: iso(deliveredAt) } : {}),
      },
      ...(status === 'failed'
        ? { error: { code: 'INVALID_NUMBER', message: 'the number is invalid or not reachable' } }
        : {}),
    };
    this.#hooks.post(event);
  }

  /** A customer's inbound text: opens the 24-hour window and posts the inbound message. */
  inbound(a: Account, from: string, text: string, ageMs: number): ChatInboundItem {
    const at = Date.now() - ageMs;
    a.lastInbound.set(from, Math.max(a.lastInbound.get(from) ?? 0, at));
    const item: ChatInboundItem = {
      id: chatMessageId(),
      from,
      timestamp: iso(at),
      type: 'text',
      text: { body: text },
    };
    this.#hooks.post(chatPayload({ messages: [item] }));
    return item;
  }

  /** A tap on a button of a sent message; answers the event posted. */
  tap(messageId: string, buttonId: string): ChatWebhookPayload | RcsButtonClickEvent {
    const m = this.#state.messages.get(messageId);
    if (m === undefined) throw new ApiError(404, `message ${messageId} not found`);
    const now = Date.now();
    if (m.channel === 'rcs') {
      const t = m.rcsTemplate!;
      const suggestions: RcsSuggestion[] = [
        ...(t.suggestions ?? []),
        ...(t.cards ?? []).flatMap((c) => c.suggestions ?? []),
      ].map((x) => ({
        type: x.type,
        label: render(x.label, m.params)!,
        ...(x.postback !== undefined ? { postback: render(x.postback, m.params)! } : {}),
        ...(x.url !== undefined ? { url: render(x.url, m.params)! } : {}),
      }));
      const s = suggestions.find((x) => x.postback === buttonId || x.label === buttonId);
      if (s === undefined) {
        throw badRequest(`message ${messageId} has no suggestion with postback or label ${buttonId}`);
      }
      const event: RcsButtonClickEvent = {
        event_type: 'button_click',
        timestamp: iso(now),
        message_id: m.id,
        bot_id: t.bot_name,
        user_phone: m.to,
        interaction: {
          type: s.type === 'reply' ? 'action' : s.type,
          button_text: s.label,
          // Every documented field, null where it does not apply to the tap.
          postback_data: s.postback ?? null,
          url: s.url ?? null,
        },
      };
      this.#hooks.post(event);
      return event;
    }
    const msg = m.message;
    let item: ChatInboundItem | undefined;
    const base = { id: chatMessageId(), from: m.to, timestamp: iso(now), context: { id: m.id } };
    if (msg?.type === 'interactive') {
      const b = msg.interactive.action.buttons.find((x) => x.reply.id === buttonId);
      if (b !== undefined) {
        item = {
          ...base,
          type: 'interactive',
          interactive: { type: 'button_reply', button_reply: { id: b.reply.id, title: b.reply.title } },
        };
      }
    } else if (msg?.type === 'template') {
      const a = this.#state.accounts.get(m.accountId);
      const t = a?.chatTemplates.get(msg.template.name);
      for (const c of t?.input.components ?? []) {
        if (c.type !== 'BUTTONS') continue;
        const b = c.buttons.find((x) => x.type === 'QUICK_REPLY' && x.text === buttonId);
        if (b !== undefined) item = { ...base, type: 'button', button: { payload: b.text, text: b.text } };
      }
    }
    if (item === undefined) throw badRequest(`message ${messageId} has no reply button ${buttonId}`);
    // A reply is an inbound message: it opens the customer's 24-hour window.
    this.#state.accounts.get(m.accountId)?.lastInbound.set(m.to, now);
    const payload = chatPayload({ messages: [item] });
    this.#hooks.post(payload);
    return payload;
  }

  close(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }
}
