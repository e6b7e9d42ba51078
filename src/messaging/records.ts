/**
 * The message stores' records and interface: what the bridge keeps of each message it sent (chat and
 * RCS), the sends still waiting for their message id, and the webhook events that report on them.
 * The memory store (store-memory.ts) and the Redis store (store-redis.ts) both keep it.
 */
import type { MessageStatus, MessagingEvent } from './types.js';

/** What kind of message a send was: a chat message type, an RCS template, or one recipient of a campaign. */
export const MESSAGE_KINDS = [
  'template',
  'text',
  'image',
  'document',
  'interactive',
  'rcs_template',
  'campaign',
] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

/** A message the bridge sent, as recorded when the provider answered (before any webhook event). */
export interface SentMessage {
  readonly message_id: string;
  readonly tenant: string;
  readonly channel: 'chat' | 'rcs';
  /** The call it was sent during; its bot is told of the message's events. */
  readonly session_id?: string;
  /** The number it went to, as the provider was given it. */
  readonly to: string;
  readonly kind: MessageKind;
  /** ISO 8601 UTC. */
  readonly sent_at: string;
  /** RCS, and campaigns: the campaign the send was launched as. */
  readonly campaign_id?: string;
}

/** A message's record: the send, its latest status and the webhook events that reported on it. */
export interface MessageRecord extends SentMessage {
  /** By rank sent < delivered < read; failed wins over every other. */
  readonly status: MessageStatus;
  /** In the order they arrived, at most MAX_EVENTS_PER_MESSAGE (later ones still move the status). */
  readonly events: readonly MessagingEvent[];
}

/**
 * A send before its message id is known (an RCS launch answers with a campaign id only; a campaign
 * names no message ids): the message id comes with the first webhook event for its channel and
 * recipient.
 */
export interface PendingSend extends Omit<SentMessage, 'message_id' | 'campaign_id'> {
  /** The recipient as the webhook names it: chat digits with the country code, RCS 10 digits. */
  readonly to: string;
  readonly campaign_id: string;
  /** When the launch was asked for (ms since the epoch): events that arrived before it are not this send's. */
  readonly requested_at_ms: number;
}

/** An RCS send to a call's customer, before its message id is known. */
export interface PendingRcsSend extends Omit<PendingSend, 'channel'> {
  /** The recipient's 10 digits (the launcher's `mobile`). */
  readonly to: string;
}

/** A campaign the bridge launched (or saved unlaunched) for a tenant: one send per recipient. */
export interface CampaignSends {
  readonly tenant: string;
  readonly channel: 'chat' | 'rcs';
  /** A call's chat template send (a campaign of one): the call whose bot hears of its events. */
  readonly session_id?: string;
  /** What each send is recorded as: `campaign` (the default), or `template` for a call's template send. */
  readonly kind?: 'campaign' | 'template';
  readonly campaign_id: string;
  /** Each recipient as the webhook will name it: chat digits with the country code, RCS 10 digits. */
  readonly recipients: readonly string[];
  /** ISO 8601 UTC. */
  readonly sent_at: string;
  /** When the launch was asked for (ms since the epoch). */
  readonly requested_at_ms: number;
}

/** What recording a campaign did. */
export interface CampaignOutcome {
  /** The records of sends that adopted, at once, events that had arrived first. */
  readonly adopted: MessageRecord[];
  /**
   * RCS recipients not recorded: a call's RCS send to the number is being launched or waits for its
   * first event, and the two sends could take each other's message.
   */
  readonly skipped: number;
}

/** What adding a webhook event did. */
export interface EventOutcome {
  /** False when the event was seen before within the retention: nothing changed, nothing to forward. */
  readonly fresh: boolean;
  /** The record the event is on now; undefined when it is a duplicate or no send of ours matches yet. */
  readonly record: MessageRecord | undefined;
  /**
   * The events this call added to the record, in order: the event itself, after any of the same
   * message's events held before it while no send matched (they go to the call's bot too).
   */
  readonly added: readonly MessagingEvent[];
}

export interface MessageStore {
  /**
   * Recipients a campaign may have: the campaign routes refuse a larger one (400) before the provider
   * is asked, so that every recipient's send is held.
   */
  readonly maxCampaignRecipients: number;
  /**
   * Records a chat send. Events for it that arrived first (the webhook outran the sender's answer) are
   * added to it now; the record is returned with them.
   */
  recordSent(message: SentMessage): Promise<MessageRecord>;
  /**
   * Reserves the RCS recipient `mobile` for a call's send, before the launch is asked for: undefined
   * (nothing reserved) when another RCS send to it (a call's or a campaign's, of any tenant) is still
   * waiting for its first event, or a call's is being launched; its adoption would be ambiguous. Else the reservation's id, given back
   * to recordPendingRcs or releaseRcs; a reservation not given back lapses after PENDING_TTL_MS.
   */
  reserveRcs(mobile: string): Promise<string | undefined>;
  /** Gives back a reservation whose launch failed. */
  releaseRcs(mobile: string, reservation: string): Promise<void>;
  /**
   * Records an RCS send awaiting its message id, ending its reservation. When the first event (`sent`)
   * of a message to the recipient arrived after the launch was asked for and before this, the send
   * adopts that message at once: the record is returned.
   */
  recordPendingRcs(send: PendingRcsSend, reservation?: string): Promise<MessageRecord | undefined>;
  /**
   * Records a launched campaign's sends, one pending send per recipient (kind `campaign`), each adopted
   * by the first event (`sent`) of a message of its channel to its recipient, oldest send first. Events
   * that arrived after the launch was asked for and before this are adopted at once: their records are
   * returned. An RCS recipient that a call's send holds (reserved, or waiting for its first event) is
   * skipped, and counted.
   */
  recordCampaign(campaign: CampaignSends): Promise<CampaignOutcome>;
  /** Holds a campaign saved but not launched (HTTP 207): nothing is recorded until it is launched. */
  saveCampaign(campaign: CampaignSends): Promise<void>;
  /**
   * A saved campaign was launched: its sends are recorded as recordCampaign does, for the tenant that
   * saved it, launched at `requestedAtMs`. Undefined when no such campaign is held.
   */
  launchSavedCampaign(
    campaignId: string,
    requestedAtMs: number,
    sentAt: string,
  ): Promise<CampaignOutcome | undefined>;
  /**
   * Adds a webhook event, once: the event's dedupe key (dedupeKey in rules.ts) is set and the event
   * recorded in one atomic step, so an event is counted seen only once it is stored, across instances.
   * An event for an unknown message that is its first (status `sent`, or a `failed` when nothing else
   * of the message was seen before it; stamped no earlier than CLOCK_SKEW_MS before a pending send was
   * asked for) adopts the oldest such live pending send of its channel to `recipient` (recipientOf in rules.ts); any other is held a short while, in case the
   * send's answer is still on its way.
   */
  addEvent(event: MessagingEvent, recipient: string | undefined): Promise<EventOutcome>;
  /** A message the tenant sent, or undefined. */
  get(tenant: string, messageId: string): Promise<MessageRecord | undefined>;
}
