/**
 * Messaging rigs for tests, each a real bridge on 127.0.0.1 with real JWTs and its log lines kept for
 * searching:
 * - startMessagingRig, for end-to-end tests: the bridge's messaging client talks to a real provider
 *   emulator over loopback (the emulator's API key as MESSAGING_TOKEN), the emulator's webhooks are
 *   posted back to the bridge's `/v1/webhooks/messaging` with the webhook secret, a real ws bot is the
 *   calls' BOT_URL, and calls are opened by a real provider socket;
 * - startWebhookBridge, for the webhook route's tests: the messaging client is a stand-in answering with
 *   numbered ids (stubMessaging), and the tests post the provider's webhooks themselves (postWebhook,
 *   with the payloads built by chatStatuses, chatButton, rcsStatus and rcsButton).
 */
import { afterEach } from 'vitest';
import type { Bridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import type { MessagingOptions } from '../../src/emulator/messaging/emulator.js';
import type { Emulator } from '../../src/emulator/server.js';
import type { ChatCampaignRequest, MessagingClient, RcsCampaignRequest } from '../../src/messaging/types.js';
import { call, type JsonAnswer } from '../control/harness.js';
import { type BotConnection, TestBot } from './bot.js';
import { TestProvider } from './provider.js';
import { type InProcessRig, type RigOptions, startRig } from './rig.js';
import { maxInWindow as maxInHalfOpenWindow } from './window.js';

export const AUTH_SECRET = 'messaging-e2e-auth-secret';
export const MEDIA_SECRET = 'messaging-e2e-media-secret';
export const EMULATOR_SECRET = 'messaging-e2e-emulator-secret';
export const WEBHOOK_SECRET = 'messaging-e2e-webhook-secret-0042';
export const ALL_MESSAGING_SCOPES = ['calls:control', 'messages:read', 'messages:manage'];
/** A caller's number as the provider gives it in session_start (chat takes any country). */
export const PHONE = '+14155550100';
/** A number RCS goes to (MESSAGING_RCS_COUNTRY_CODE 91 by default), and its 10-digit mobile. */
export const RCS_PHONE = '+91 98765 43210';
export const RCS_MOBILE = '9876543210';

export interface MessagingRig {
  readonly bridge: Bridge;
  /** The bridge, e.g. `http://127.0.0.1:40123`. */
  readonly http: string;
  readonly emulator: Emulator;
  /** The emulator, without `/v1`. */
  readonly emulatorUrl: string;
  readonly bot: TestBot;
  /** Every log line the bridge wrote (JSON). */
  readonly logs: string[];
  /** Requests that reached the emulator's messaging API (`/v1/chat_*`, `/v1/rcs_*`), by path. */
  readonly upstream: string[];
  /** A bearer token for the bridge's REST routes. */
  token(scopes?: string[], tenant?: string): Promise<string>;
  /** A request to the bridge. */
  api(method: string, path: string, o?: { token?: string; body?: unknown }): Promise<JsonAnswer>;
  /** A request to the emulator's control API under `/emulator/messaging`. */
  control(method: string, path: string, body?: unknown): Promise<JsonAnswer>;
  /** A provider socket that starts session `sessionId` with `customerPhone`; waits for the bot's leg. */
  liveCall(sessionId: string, customerPhone: string): Promise<{ provider: TestProvider; bot: BotConnection }>;
  /** The value of a counter sample of the bridge's /metrics, 0 when absent. */
  metric(name: string, labels: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

export interface MessagingRigOptions {
  readonly messaging?: MessagingOptions;
  readonly env?: Record<string, string>;
}

/** A bearer token for a bridge's REST routes (signed with AUTH_SECRET). */
export const restToken = (scopes: string[], tenant?: string): Promise<string> =>
  mintToken({ secret: AUTH_SECRET, scopes, ...(tenant !== undefined ? { tenant } : {}) });

/** A bridge on 127.0.0.1:0 (the rig) with this file's secrets, `env` over them, and its log lines at `logLevel`. */
function listenBridge(
  env: Record<string, string>,
  logLevel: string,
  messaging?: MessagingClient,
  rig: Omit<RigOptions, 'env' | 'log' | 'bridgeOptions' | 'process'> = {},
): Promise<InProcessRig> {
  return startRig({
    ...rig,
    env: {
      DSP_WORKERS: '0',
      AUTH_JWT_SECRET: AUTH_SECRET,
      MEDIA_SECRET,
      MESSAGING_WEBHOOK_SECRET: WEBHOOK_SECRET,
      ...env,
    },
    log: logLevel,
    ...(messaging === undefined ? {} : { bridgeOptions: { messaging } }),
  });
}

/**
 * A call the bridge at `http` holds, opened by a provider socket with a media token of `o.secret`
 * (default MEDIA_SECRET) for `o.tenant`; its ws bot is `bot`'s next connection, once it has started.
 */
export async function liveCall(
  http: string,
  bot: TestBot,
  sessionId: string,
  o: { tenant?: string; secret?: string; phone?: string } = {},
): Promise<{ provider: TestProvider; conn: BotConnection }> {
  const provider = new TestProvider(`${http.replace('http', 'ws')}/v1/media`, {
    token: await mintToken({
      secret: o.secret ?? MEDIA_SECRET,
      ttlSeconds: 600,
      ...(o.tenant ? { tenant: o.tenant } : {}),
    }),
  });
  const index = bot.connections.length;
  await provider.start(sessionId, { customer_phone: o.phone ?? PHONE });
  return { provider, conn: await bot.waitConnection(index) };
}

export async function startMessagingRig(o: MessagingRigOptions = {}): Promise<MessagingRig> {
  const rig = await listenBridge(o.env ?? {}, 'info', undefined, {
    bot: { echo: false },
    providers: { messaging: o.messaging ?? {} },
  });
  const { bridge, http, logs } = rig;
  const bot = rig.bot!;
  const emulator = rig.emulator!;
  const emulatorUrl = rig.emulatorUrl!;
  const upstream: string[] = [];
  emulator.app.server.on('request', (req: { url?: string }) => {
    const path = (req.url ?? '').split('?')[0]!;
    if (/^\/v1\/(chat|rcs)_/.test(path)) upstream.push(path);
  });
  const providers: TestProvider[] = [];

  const control = (method: string, path: string, body?: unknown) =>
    call(emulatorUrl, method, `/emulator/messaging${path}`, body === undefined ? {} : { body });
  // The emulator posts its webhooks to the bridge, with the secret (set through its control API).
  const hook = await control('PUT', '/webhook', {
    url: `${http}/v1/webhooks/messaging?token=${WEBHOOK_SECRET}`,
  });
  if (hook.status !== 200) {
    await rig.close();
    throw new Error(`webhook URL not set: ${hook.status} ${hook.text}`);
  }

  return {
    bridge,
    http,
    emulator,
    emulatorUrl,
    bot,
    logs,
    upstream,
    token: (scopes = ALL_MESSAGING_SCOPES, tenant) => restToken(scopes, tenant),
    api: (method, path, opts = {}) => call(http, method, path, opts),
    control,
    async liveCall(sessionId, customerPhone) {
      const { provider, conn } = await liveCall(http, bot, sessionId, { phone: customerPhone });
      providers.push(provider);
      return { provider, bot: conn };
    },
    async metric(name, labels) {
      const res = await fetch(`${http}/metrics`);
      const text = await res.text();
      const want = Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .sort();
      for (const line of text.split('\n')) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? ([0-9.eE+-]+)$/.exec(line);
        if (m === null || m[1] !== name) continue;
        const have = (m[2] ?? '').split(',').filter((s) => s !== '');
        if (want.every((w) => have.includes(w))) return Number(m[3]);
      }
      return 0;
    },
    async close() {
      for (const p of providers) p.close();
      await rig.close();
    },
  };
}

/**
 * The most sends in any window of `windowMs` that starts at one of them, at or after `from` (all by
 * default). The window is shortened by a microsecond so that a send exactly one window after another
 * is not counted with it.
 */
export function maxInWindow(times: readonly number[], windowMs = 1_000, from = Number.NEGATIVE_INFINITY) {
  return maxInHalfOpenWindow(times, windowMs - 1e-3, from);
}

/** Runs `fn` over `items` with at most `limit` in flight; the results in order. */
export async function pooled<T, R>(
  items: readonly T[],
  limit: number,
  fn: (t: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** A stand-in for the provider's messaging API: numbered message and campaign ids, nothing else. */
export function stubMessaging(): MessagingClient & {
  sends: unknown[];
  campaigns: RcsCampaignRequest[];
  chatCampaigns: ChatCampaignRequest[];
} {
  let n = 0;
  const sends: unknown[] = [];
  const campaigns: RcsCampaignRequest[] = [];
  const chatCampaigns: ChatCampaignRequest[] = [];
  const no = async () => {
    throw new Error('not used here');
  };
  return {
    sends,
    campaigns,
    chatCampaigns,
    async createChatCampaign(req) {
      chatCampaigns.push(req);
      return { launched: true, campaign: { id: `chat-camp-${++n}`, status: 'launched' } };
    },
    async sendChatMessage(req) {
      sends.push(req);
      return {
        success: true,
        data: { message_id: `wamid.${++n}.${Date.now()}`, wa_id: req.to, status: 'sent' },
        performance: { total_time_ms: 1 },
      };
    },
    async launchRcsCampaign(req) {
      campaigns.push(req);
      return { status: 'launched', campaign_id: `camp-${++n}`, messages_queued: req.contacts.length };
    },
    listChatTemplates: no,
    createChatTemplate: no,
    getChatTemplateStatus: no,
    syncChatTemplates: no,
    deleteChatTemplate: no,
    launchChatCampaign: no,
    createRcsTemplate: no,
    async close() {},
  };
}

export interface WebhookBridge {
  readonly bridge: Bridge;
  readonly http: string;
  /** Every log line the bridge wrote (JSON, from debug up). */
  readonly logs: string[];
  close(): Promise<void>;
}

/** A bridge whose webhook takes WEBHOOK_SECRET, `env` over the defaults; `messaging` its client, if any. */
export async function startWebhookBridge(
  env: Record<string, string> = {},
  messaging?: MessagingClient,
): Promise<WebhookBridge> {
  return listenBridge(env, 'debug', messaging);
}

/**
 * Registers an afterEach that closes what a test opened (`open`, last first), and returns `open` with
 * `rigWithCall`: a webhook bridge with a stand-in client, a ws bot and call `call-1` from `phone`, and a
 * token for calls:control and messages:read.
 */
export function useWebhookRigs() {
  const open: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });
  async function rigWithCall(env: Record<string, string> = {}, phone = PHONE) {
    const bot = await TestBot.start({ echo: false });
    const messaging = stubMessaging();
    const rig = await startWebhookBridge({ BOT_URL: bot.url, ...env }, messaging);
    open.push(bot, rig);
    const { provider, conn } = await liveCall(rig.http, bot, 'call-1', { phone });
    open.push(provider);
    const token = await restToken(['calls:control', 'messages:read']);
    return { bot, rig, conn, token, messaging };
  }
  return { open, rigWithCall };
}

/**
 * Posts `body` (a string as it is, anything else as JSON) to the bridge's webhook with `o.token`
 * (default WEBHOOK_SECRET; null: none) as a bearer token, or in `?token=` with `o.query`.
 */
export async function postWebhook(
  http: string,
  body: unknown,
  o: { token?: string | null; query?: boolean } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const token = o.token === undefined ? WEBHOOK_SECRET : o.token;
  const path =
    o.query === true && token !== null ? `/v1/webhooks/messaging?token=${token}` : '/v1/webhooks/messaging';
  const res = await fetch(`${http}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token !== null && o.query !== true ? { authorization: `Bearer ${token}` } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A chat webhook payload with `statuses` of message `id`, one millisecond apart. */
export const chatStatuses = (id: string, ...statuses: string[]) => ({
  object: 'chat',
  entry: [
    {
      changes: [
        {
          field: 'messages',
          value: {
            statuses: statuses.map((status, i) => ({
              id,
              status,
              timestamp: new Date(Date.now() + i).toISOString(),
              recipient_id: '14155550100',
            })),
          },
        },
      ],
    },
  ],
});

/** A chat webhook payload with a tap of reply button `buttonId` of message `id`. */
export const chatButton = (id: string, buttonId: string, timestamp = new Date().toISOString()) => ({
  object: 'chat',
  entry: [
    {
      changes: [
        {
          field: 'messages',
          value: {
            messages: [
              {
                id: `in-${buttonId}`,
                from: '14155550100',
                timestamp,
                type: 'interactive',
                interactive: { type: 'button_reply', button_reply: { id: buttonId, title: 'Yes please' } },
                context: { id },
              },
            ],
          },
        },
      ],
    },
  ],
});

/** An RCS delivery_status event of message `id`. */
export const rcsStatus = (id: string, status: string, recipient = '4155550100') => ({
  event_type: 'delivery_status',
  timestamp: new Date().toISOString(),
  message_id: id,
  bot_id: 'bot-1',
  recipient,
  status,
});

/** An RCS button_click event of message `id`, tapped by `from`. */
export const rcsButton = (id: string, from: string) => ({
  event_type: 'button_click',
  timestamp: new Date().toISOString(),
  message_id: id,
  bot_id: 'bot-1',
  user_phone: from,
  interaction: { type: 'action', button_text: 'Track order', postback_data: 'track' },
});

/** The events of `event` the bot connection received. */
export const notices = (conn: BotConnection, event: string) => conn.events.filter((e) => e.event === event);
