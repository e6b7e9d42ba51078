/**
 * The provider's webhook posts read into `MessagingEvent`s: a chat payload (ours: chat.md does not show
 * one), an RCS event (rcs.md's `delivery_status` and `button_click`), or an array of RCS events. Pure,
 * no I/O: the route (webhook.ts) records and forwards what this returns.
 */
import { BridgeError, describe, isBridgeError } from '../errors.js';
import { MESSAGE_STATUSES, type MessageStatus, type MessagingEvent } from './types.js';

/** Events one webhook post may carry; a provider batches far fewer. */
export const MAX_EVENTS_PER_POST = 1_000;
/** Longest id, number or text field accepted from a webhook. */
const MAX_FIELD_CHARS = 1_024;

// ---------------------------------------------------------------------------------------------------
// Webhook payloads: a chat payload (ours, in the nested form of chat networks), an RCS event, or an
// array of RCS events. The envelope must be readable (else 400 naming what is wrong, nothing taken);
// inside it, a bad event (or a bad entry, change or list holding events) is skipped and reported, the
// rest taken: one unknown status must not cost a batch of a thousand its other events.

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function malformed(field: string, accepts: string, got: unknown): never {
  throw new BridgeError('invalid_field', `${field} must be ${accepts}, got ${describe(got)}`, { field });
}

function obj(v: unknown, field: string): Obj {
  if (!isObj(v)) malformed(field, 'an object', v);
  return v;
}

function list(v: unknown, field: string): unknown[] {
  if (!Array.isArray(v)) malformed(field, 'an array', v);
  return v;
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '' || v.length > MAX_FIELD_CHARS) {
    malformed(field, `a string of 1 to ${MAX_FIELD_CHARS} characters`, v);
  }
  return v;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * A field a provider may leave out or send as null where it does not apply (rcs.md lists `postback_data`
 * and `url` on every tap, and `error` only "when status is failed"): both read as absent.
 */
function given<T>(v: T | null | undefined): T | undefined {
  return v === null ? undefined : v;
}

function time(v: unknown, field: string): string {
  if (typeof v !== 'string' || !ISO_8601.test(v)) malformed(field, 'an ISO 8601 timestamp', v);
  return v;
}

/** An error code: rcs.md gives a string (`INVALID_NUMBER`), chat.md numbers (131026); either is kept as text. */
function code(v: unknown, field: string): string {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return str(v, field);
}

function messageStatus(v: unknown, field: string): MessageStatus {
  if (!(MESSAGE_STATUSES as readonly unknown[]).includes(v)) malformed(field, MESSAGE_STATUSES.join(', '), v);
  return v as MessageStatus;
}

/** A webhook post read: its events, and what was skipped. */
export interface WebhookPost {
  readonly channel: 'chat' | 'rcs';
  readonly events: MessagingEvent[];
  /** Events (or entries, changes, lists holding them) skipped as unreadable. */
  readonly rejected: number;
  /** The first skipped one's field and what it accepts. */
  readonly firstRejection: { readonly field: string; readonly message: string } | undefined;
}

/** Collects a post's events and its rejections, bounded by MAX_EVENTS_PER_POST. */
class Collector {
  readonly events: MessagingEvent[] = [];
  rejected = 0;
  firstRejection: { field: string; message: string } | undefined;

  /** Reads one event (none: not an event, skipped); a BridgeError naming a field is a rejection. */
  take(read: () => MessagingEvent | undefined): void {
    this.within(() => {
      const ev = read();
      if (ev === undefined) return;
      this.events.push(ev);
      this.#bound();
    });
  }

  /** Reads a container of events (an entry, a change, a list); a bad one is one rejection. */
  within(read: () => void): void {
    try {
      read();
    } catch (err) {
      if (!isBridgeError(err) || err.code !== 'invalid_field') throw err;
      this.rejected++;
      this.firstRejection ??= { field: err.field ?? '', message: err.message };
      this.#bound();
    }
  }

  #bound(): void {
    if (this.events.length + this.rejected > MAX_EVENTS_PER_POST) {
      throw new BridgeError('bad_request', `a webhook post may carry at most ${MAX_EVENTS_PER_POST} events`);
    }
  }
}

export function parseWebhook(body: unknown): WebhookPost {
  const c = new Collector();
  let channel: 'chat' | 'rcs' = 'rcs';
  if (Array.isArray(body)) {
    if (body.length === 0)
      throw new BridgeError('bad_request', 'the webhook post is an empty array: no events');
    if (body.length > MAX_EVENTS_PER_POST) {
      throw new BridgeError('bad_request', `a webhook post may carry at most ${MAX_EVENTS_PER_POST} events`);
    }
    body.forEach((e, i) => {
      c.take(() => rcsEvent(obj(e, `[${i}]`), `[${i}].`));
    });
  } else if (isObj(body) && body.object !== undefined) {
    if (body.object !== 'chat') malformed('object', '"chat" (a chat webhook payload)', body.object);
    channel = 'chat';
    chatEvents(list(body.entry, 'entry'), c);
  } else if (isObj(body) && body.event_type !== undefined) {
    c.take(() => rcsEvent(body, ''));
  } else {
    throw new BridgeError(
      'bad_request',
      `the webhook post must be a chat payload ({"object": "chat", "entry": [...]}), an RCS event (event_type delivery_status or button_click), or an array of RCS events; got ${describe(body)}`,
    );
  }
  return { channel, events: c.events, rejected: c.rejected, firstRejection: c.firstRejection };
}

function rcsEvent(e: Obj, p: string): MessagingEvent {
  const timestamp = time(e.timestamp, `${p}timestamp`);
  const message_id = str(e.message_id, `${p}message_id`);
  if (e.event_type === 'delivery_status') {
    const status = messageStatus(e.status, `${p}status`);
    const recipient = str(e.recipient, `${p}recipient`);
    let error: { code: string; message: string } | undefined;
    if (given(e.error) !== undefined) {
      const x = obj(e.error, `${p}error`);
      error = { code: code(x.code, `${p}error.code`), message: str(x.message, `${p}error.message`) };
    }
    return {
      kind: 'status',
      channel: 'rcs',
      message_id,
      status,
      recipient,
      timestamp,
      ...(error === undefined ? {} : { error }),
    };
  }
  if (e.event_type === 'button_click') {
    const from = str(e.user_phone, `${p}user_phone`);
    const i = obj(e.interaction, `${p}interaction`);
    const button_text = str(i.button_text, `${p}interaction.button_text`);
    // The field that does not apply to the tap (url on a postback, postback_data on a URL) may be null.
    const postback =
      given(i.postback_data) === undefined
        ? undefined
        : str(i.postback_data, `${p}interaction.postback_data`);
    const url = given(i.url) === undefined ? undefined : str(i.url, `${p}interaction.url`);
    return {
      kind: 'button',
      channel: 'rcs',
      message_id,
      from,
      timestamp,
      // Application logic keys on postback_data (rcs.md); url and phone buttons have none.
      button_id: postback ?? button_text,
      button_text,
      ...(url === undefined ? {} : { url }),
    };
  }
  return malformed(`${p}event_type`, 'delivery_status or button_click', e.event_type);
}

function chatEvents(entries: unknown[], c: Collector): void {
  entries.forEach((en, i) => {
    // A bad container is one rejection: the events it may hold cannot be counted.
    c.within(() => {
      const entry = obj(en, `entry[${i}]`);
      list(entry.changes, `entry[${i}].changes`).forEach((ch, j) => {
        const p = `entry[${i}].changes[${j}]`;
        c.within(() => {
          const change = obj(ch, p);
          // Other fields (template reviews, account updates) are not about messages: skipped.
          if (change.field !== 'messages') return;
          const value = obj(change.value, `${p}.value`);
          if (value.statuses !== undefined) {
            c.within(() => {
              list(value.statuses, `${p}.value.statuses`).forEach((st, k) => {
                const q = `${p}.value.statuses[${k}]`;
                c.take(() => chatStatus(obj(st, q), q));
              });
            });
          }
          if (value.messages !== undefined) {
            c.within(() => {
              list(value.messages, `${p}.value.messages`).forEach((m, k) => {
                const q = `${p}.value.messages[${k}]`;
                c.take(() => chatButton(obj(m, q), q));
              });
            });
          }
        });
      });
    });
  });
}

function chatStatus(s: Obj, p: string): MessagingEvent {
  const message_id = str(s.id, `${p}.id`);
  const status = messageStatus(s.status, `${p}.status`);
  const timestamp = time(s.timestamp, `${p}.timestamp`);
  const recipient = str(s.recipient_id, `${p}.recipient_id`);
  let error: { code: string; message: string } | undefined;
  if (given(s.errors) !== undefined) {
    const first = list(s.errors, `${p}.errors`)[0];
    if (first !== undefined) {
      const x = obj(first, `${p}.errors[0]`);
      error = { code: code(x.code, `${p}.errors[0].code`), message: str(x.title, `${p}.errors[0].title`) };
    }
  }
  return {
    kind: 'status',
    channel: 'chat',
    message_id,
    status,
    recipient,
    timestamp,
    ...(error === undefined ? {} : { error }),
  };
}

/**
 * A tapped reply button (interactive `button_reply`) or template quick reply (`button`); other inbound
 * messages (texts, other interactive replies) are not about a message the bridge sent: none.
 */
function chatButton(m: Obj, p: string): MessagingEvent | undefined {
  if (m.type !== 'interactive' && m.type !== 'button') return undefined;
  if (m.type === 'interactive' && (!isObj(m.interactive) || m.interactive.type !== 'button_reply')) {
    if (!isObj(m.interactive)) malformed(`${p}.interactive`, 'an object', m.interactive);
    return undefined;
  }
  const from = str(m.from, `${p}.from`);
  const timestamp = time(m.timestamp, `${p}.timestamp`);
  const message_id = str(obj(m.context, `${p}.context`).id, `${p}.context.id`);
  // The reply button's id and title, or the quick reply's payload and text.
  const [at, button, id, text]: [string, unknown, string, string] =
    m.type === 'interactive'
      ? [`${p}.interactive.button_reply`, (m.interactive as Obj).button_reply, 'id', 'title']
      : [`${p}.button`, m.button, 'payload', 'text'];
  const b = obj(button, at);
  return {
    kind: 'button',
    channel: 'chat',
    message_id,
    from,
    timestamp,
    button_id: str(b[id], `${at}.${id}`),
    button_text: str(b[text], `${at}.${text}`),
  };
}
