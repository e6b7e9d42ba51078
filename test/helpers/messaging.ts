/**
 * A messaging rig for end-to-end tests: a real bridge on 127.0.0.1 whose messaging client talks to a
 * real provider emulator over loopback (the emulator's API key as MESSAGING_TOKEN), the emulator's
 * webhooks posted back to the bridge's `/v1/webhooks/messaging` with the webhook secret, a real ws bot
 * as the calls' BOT_URL, and calls opened by a real provider socket. Everything goes over HTTP and
 * WebSockets with real JWTs; the bridge's log lines are kept for searching.
 */
import { type Bridge, createBridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import type { MessagingOptions } from '../../src/emulator/messaging/emulator.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import { call, type JsonAnswer } from '../control/harness.js';
import { type BotConnection, TestBot } from './bot.js';
import { TestProvider } from './provider.js';

export const AUTH_SECRET = 'messaging-e2e-auth-secret';
export const MEDIA_SECRET = 'messaging-e2e-media-secret';
export const EMULATOR_SECRET = 'messaging-e2e-emulator-secret';
export const WEBHOOK_SECRET = 'messaging-e2e-webhook-secret-0042';
export const ALL_MESSAGING_SCOPES = ['calls:control', 'messages:read', 'messages:manage'];

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

export async function startMessagingRig(o: MessagingRigOptions = {}): Promise<MessagingRig> {
  const bot = await TestBot.start({ echo: false });
  const emulator = await createEmulator({
    jwtSecret: EMULATOR_SECRET,
    log: createLogger('silent'),
    ...(o.messaging === undefined ? {} : { messaging: o.messaging }),
  });
  const emulatorUrl = await emulator.listen(0, '127.0.0.1');
  const upstream: string[] = [];
  emulator.app.server.on('request', (req: { url?: string }) => {
    const path = (req.url ?? '').split('?')[0]!;
    if (/^\/v1\/(chat|rcs)_/.test(path)) upstream.push(path);
  });
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DSP_WORKERS: '0',
    AUTH_JWT_SECRET: AUTH_SECRET,
    MEDIA_SECRET,
    MESSAGING_BASE_URL: `${emulatorUrl}/v1`,
    MESSAGING_TOKEN: emulator.messaging.defaultApiKey,
    MESSAGING_WEBHOOK_SECRET: WEBHOOK_SECRET,
    BOT_URL: bot.url,
    ...o.env,
  });
  const logs: string[] = [];
  const log = createLogger('info', { write: (line: string) => void logs.push(line) });
  const bridge = await createBridge(config, { log });
  const http = await bridge.listen();
  const providers: TestProvider[] = [];

  const control = (method: string, path: string, body?: unknown) =>
    call(emulatorUrl, method, `/emulator/messaging${path}`, body === undefined ? {} : { body });
  // The emulator posts its webhooks to the bridge, with the secret (set through its control API).
  const hook = await control('PUT', '/webhook', {
    url: `${http}/v1/webhooks/messaging?token=${WEBHOOK_SECRET}`,
  });
  if (hook.status !== 200) throw new Error(`webhook URL not set: ${hook.status} ${hook.text}`);

  return {
    bridge,
    http,
    emulator,
    emulatorUrl,
    bot,
    logs,
    upstream,
    token: (scopes = ALL_MESSAGING_SCOPES, tenant) =>
      mintToken({ secret: AUTH_SECRET, scopes, ...(tenant !== undefined ? { tenant } : {}) }),
    api: (method, path, opts = {}) => call(http, method, path, opts),
    control,
    async liveCall(sessionId, customerPhone) {
      const provider = new TestProvider(`${http.replace('http', 'ws')}/v1/media`, {
        token: await mintToken({ secret: MEDIA_SECRET, ttlSeconds: 600 }),
      });
      providers.push(provider);
      const index = bot.connections.length;
      await provider.start(sessionId, { customer_phone: customerPhone });
      return { provider, bot: await bot.waitConnection(index) };
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
      await bridge.close();
      await emulator.close();
      await bot.close();
    },
  };
}

/**
 * The most sends in any window of `windowMs` that starts at one of them, at or after `from` (all by
 * default). The window is shortened by a microsecond so that a send exactly one window after another
 * is not counted with it.
 */
export function maxInWindow(times: readonly number[], windowMs = 1_000, from = Number.NEGATIVE_INFINITY) {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    if (sorted[i]! < from) continue;
    j = Math.max(j, i);
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs - 1e-3) j++;
    best = Math.max(best, j - i);
  }
  return best;
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
