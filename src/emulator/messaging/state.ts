/**
 * What the messaging emulator remembers: workspaces and their accounts, credentials, chat and RCS
 * templates, campaigns, sent messages and the counters tests read back.
 */
import type {
  ChatMessage,
  ChatTemplateInput,
  RcsTemplate,
  TemplateCategory,
  TemplateStatus,
} from './wire.js';

export const TIER_LIMITS: Readonly<Record<number, number>> = {
  1: 1_000,
  2: 10_000,
  3: 100_000,
  4: Number.POSITIVE_INFINITY,
};
export const DAY_MS = 24 * 3600 * 1000;

export interface Workspace {
  readonly id: string;
  readonly accountIds: string[];
}

export interface Credential {
  readonly token: string;
  readonly kind: 'api_key' | 'account_token';
  /** The workspace an API key speaks for. */
  readonly workspaceId?: string;
  /** The account an account token speaks for. */
  readonly accountId?: string;
  revoked: boolean;
  /** Epoch ms after which it is refused; undefined: never. */
  expiresAt: number | undefined;
}

export interface Account {
  readonly id: string;
  readonly workspaceId: string;
  /** Remaining credits; null: unlimited. */
  credits: number | null;
  /** Credits promised to campaigns still fanning out (charged as each message is sent). */
  reserved: number;
  tier: 1 | 2 | 3 | 4;
  /** Messages promised to campaigns still fanning out, counted against the tier ahead of their send. */
  pendingTier: number;
  /** Send times (epoch ms) of the last 24 h, oldest first, for the tier limit. */
  readonly dayLog: number[];
  /** Admission times (performance.now) of the last second of /chat_message_sender. */
  readonly senderLog: number[];
  /** Admission times (performance.now) of the last minute of GET /chat_templates. */
  readonly listLog: number[];
  /** Customer number to the epoch ms of their last inbound message. */
  readonly lastInbound: Map<string, number>;
  readonly chatTemplates: Map<string, ChatTemplateRecord>;
  readonly rcsTemplates: Map<string, RcsTemplateRecord>;
  /** Campaign names used (chat and RCS share the namespace). */
  readonly campaignNames: Set<string>;
  sentTotal: number;
}

export interface ChatTemplateRecord {
  readonly id: string;
  readonly accountId: string;
  readonly input: ChatTemplateInput;
  readonly category: TemplateCategory;
  readonly bodyVariables: number;
  readonly createdAt: string;
  status: TemplateStatus;
  rejectionReason: string | null;
  deleted: boolean;
  reviewTimer?: NodeJS.Timeout | undefined;
}

export interface RcsTemplateRecord {
  readonly accountId: string;
  readonly template: RcsTemplate;
  readonly variables: readonly string[];
  readonly createdAt: string;
}

export type CampaignStatus = 'saved' | 'launched' | 'completed';

export interface CampaignRecipient {
  readonly to: string;
  /** Chat: body values in order; RCS: the contact's params. */
  readonly bodyParams?: readonly string[];
  readonly params?: Readonly<Record<string, string>>;
}

export interface CampaignRecord {
  readonly id: string;
  readonly channel: 'chat' | 'rcs';
  readonly accountId: string;
  readonly name: string;
  readonly templateName: string;
  readonly recipients: readonly CampaignRecipient[];
  readonly queuedAt: string;
  status: CampaignStatus;
  /** Recipients sent so far (the next to send is `recipients[sent]`). */
  sent: number;
}

export interface SentMessage {
  readonly id: string;
  readonly channel: 'chat' | 'rcs';
  readonly accountId: string;
  readonly to: string;
  /** Chat: what was sent (for button taps). */
  readonly message?: ChatMessage;
  /** RCS: the template it rendered (for button taps and bot_id). */
  readonly rcsTemplate?: RcsTemplate;
  /** RCS: the contact's values of the template's `{{variable}}`s. */
  readonly params?: Readonly<Record<string, string>>;
  readonly campaignId?: string;
}

/** One send, as the statistics report it. */
export interface SendRecord {
  readonly account_id: string;
  readonly message_id: string;
  readonly channel: 'chat' | 'rcs';
  readonly to: string;
  readonly campaign_id: string | null;
  /** Epoch ms with sub-millisecond precision (performance.timeOrigin + performance.now()). */
  readonly at: number;
}

export interface WebhookStats {
  /** HTTP attempts made. */
  attempted: number;
  /** Posts answered 2xx. */
  succeeded: number;
  /** Attempts answered non-2xx or lost to a connection error. */
  failed: number;
  /** Posts given up after the last attempt (or refused by a full queue). */
  dropped: number;
}

/** Sends kept for the statistics; the oldest go first. */
const MAX_SEND_RECORDS = 200_000;
/** Messages kept for button taps; the oldest go first. */
const MAX_MESSAGES = 200_000;

export class MessagingState {
  readonly workspaces = new Map<string, Workspace>();
  readonly accounts = new Map<string, Account>();
  readonly credentials = new Map<string, Credential>();
  readonly campaigns = new Map<string, CampaignRecord>();
  readonly messages = new Map<string, SentMessage>();
  readonly sends: SendRecord[] = [];
  readonly undeliverable = new Set<string>();
  readonly webhook: WebhookStats = { attempted: 0, succeeded: 0, failed: 0, dropped: 0 };
  webhookUrl: string | undefined;
  /** Sent as `Authorization: Bearer <token>` with each webhook post; never shown by the control API. */
  webhookToken: string | undefined;
  /** Launches still to fail with HTTP 207. */
  failNextLaunches = 0;

  addWorkspace(id: string): Workspace {
    const w: Workspace = { id, accountIds: [] };
    this.workspaces.set(id, w);
    return w;
  }

  addAccount(id: string, workspace: Workspace): Account {
    const a: Account = {
      id,
      workspaceId: workspace.id,
      credits: null,
      reserved: 0,
      tier: 3,
      pendingTier: 0,
      dayLog: [],
      senderLog: [],
      listLog: [],
      lastInbound: new Map(),
      chatTemplates: new Map(),
      rcsTemplates: new Map(),
      campaignNames: new Set(),
      sentTotal: 0,
    };
    this.accounts.set(id, a);
    workspace.accountIds.push(id);
    return a;
  }

  addCredential(c: Credential): Credential {
    this.credentials.set(c.token, c);
    return c;
  }

  /** Messages sent in the last 24 h by the account. */
  sentToday(a: Account, nowMs = Date.now()): number {
    const log = a.dayLog;
    let drop = 0;
    while (drop < log.length && log[drop]! <= nowMs - DAY_MS) drop++;
    if (drop > 0) log.splice(0, drop);
    return log.length;
  }

  /** How many more messages the tier lets the account send now, campaigns' promises included. */
  tierRoom(a: Account): number {
    return TIER_LIMITS[a.tier]! - this.sentToday(a) - a.pendingTier;
  }

  /** Credits not yet promised; Infinity when unlimited. */
  creditRoom(a: Account): number {
    return a.credits === null ? Number.POSITIVE_INFINITY : a.credits - a.reserved;
  }

  /** Records a send: the tier log, a credit, the statistics and the message for later taps. */
  recordSend(a: Account, m: SentMessage, perfNow = performance.now()): SendRecord {
    const at = performance.timeOrigin + perfNow;
    a.dayLog.push(Date.now());
    a.sentTotal++;
    if (a.credits !== null) a.credits--;
    const rec: SendRecord = {
      account_id: a.id,
      message_id: m.id,
      channel: m.channel,
      to: m.to,
      campaign_id: m.campaignId ?? null,
      at,
    };
    this.sends.push(rec);
    if (this.sends.length > MAX_SEND_RECORDS) this.sends.splice(0, this.sends.length - MAX_SEND_RECORDS);
    this.messages.set(m.id, m);
    if (this.messages.size > MAX_MESSAGES) {
      const oldest = this.messages.keys().next().value;
      if (oldest !== undefined) this.messages.delete(oldest);
    }
    return rec;
  }

  /** A live chat template of the name in another account than `accountId`. */
  chatTemplateElsewhere(accountId: string, name: string): ChatTemplateRecord | undefined {
    for (const a of this.accounts.values()) {
      if (a.id === accountId) continue;
      const t = a.chatTemplates.get(name);
      if (t !== undefined && !t.deleted) return t;
    }
    return undefined;
  }

  /** A campaign still fanning out that sends the template. */
  activeCampaignOf(accountId: string, templateName: string): CampaignRecord | undefined {
    for (const c of this.campaigns.values()) {
      if (
        c.channel === 'chat' &&
        c.accountId === accountId &&
        c.templateName === templateName &&
        c.status === 'launched'
      )
        return c;
    }
    return undefined;
  }
}
