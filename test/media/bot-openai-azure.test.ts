/**
 * `openai-realtime` toward Azure OpenAI (CONTRACT §9): a `url` on a host ending in `.azure.com` gets the
 * key as Azure's `api-key` header and no `Authorization`; any other host `Authorization: Bearer`. The
 * dialect's leg is made by its module as a call makes it, and dials the Realtime stand-in (which serves
 * Azure's GA path `/openai/v1/realtime` too) under a host name pointed at 127.0.0.1 by the link's
 * `lookup`, so no name is resolved outside the test. The URL as users copy it from Azure keeps its
 * deployment; the key is in no log line.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { BotSettings } from '../../src/config/bot-settings.js';
import { createRealtimeEmulator, type RealtimeEmulator } from '../../src/emulator/realtime/server.js';
import type { BridgeError } from '../../src/errors.js';
import type { BotLegSetup } from '../../src/media/bot/dialect.js';
import { isAzureHost, openaiRealtimeBot, realtimeUrl } from '../../src/media/bot/openai-realtime.js';
import type { BotLeg, CallerPort } from '../../src/media/bot/types.js';
import { createMetrics } from '../../src/metrics.js';
import { captureLog } from '../helpers/log-capture.js';
import { waitFor } from '../helpers/wait.js';

const KEY = 'azure-test-key-0123456789abcdef';

const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** Names ending in these go to 127.0.0.1; any other name is looked up as usual. */
const LOCAL_NAMES = ['.azure.com', '.example.test'];

const localLookup = ((hostname: string, options: unknown, callback: unknown) => {
  const cb = (typeof options === 'function' ? options : callback) as (
    err: NodeJS.ErrnoException | null,
    address: string | LookupAddress[],
    family?: number,
  ) => void;
  const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true;
  if (!LOCAL_NAMES.some((n) => hostname.endsWith(n)))
    return dnsLookup(hostname, (options ?? {}) as never, cb as never);
  if (all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
}) as LookupFunction;

const CALL = {
  session_id: 'azure-call',
  tenant: 'default',
  customer_phone: undefined,
  direction: undefined,
  started_at: new Date(0).toISOString(),
};

function port(): CallerPort & { failures: string[] } {
  const failures: string[] = [];
  return {
    failures,
    audio: () => {},
    mark: () => {},
    dtmf: () => {},
    hangup: () => {},
    clear: () => {},
    failed: (err: BridgeError) => failures.push(err.message),
  };
}

async function standIn(): Promise<{ em: RealtimeEmulator; port: number }> {
  const em = createRealtimeEmulator({ apiKey: KEY });
  const base = await em.listen(0);
  closers.push(() => em.close());
  return { em, port: Number(new URL(base).port) };
}

/** The dialect's leg for `url`, made by its module as a call's is, its link's log kept. */
function leg(url: string, settings: Partial<BotSettings> = {}) {
  const logs = captureLog('debug');
  const p = port();
  const format = { codec: 'pcmu', rate: 8000 } as const;
  const setup: BotLegSetup = {
    settings: { dialect: 'openai-realtime', url, apiKey: KEY, ...settings } as BotSettings,
    own: false,
    format,
    formats: { toBot: format, fromBot: format },
    link: {
      url,
      retries: 0,
      retryBaseMs: 10,
      connectTimeoutMs: 2_000,
      maxPayloadBytes: 1 << 20,
      highWaterBytes: 1 << 20,
      metrics: createMetrics(),
      log: logs.log,
      lookup: localLookup,
    },
    deps: {} as BotLegSetup['deps'],
  };
  const bot: BotLeg = openaiRealtimeBot.create(CALL, p, setup);
  closers.push(() => bot.end('test over'));
  return { bot, logs, p };
}

describe('openai-realtime toward Azure OpenAI', () => {
  it('sends the key as api-key, and no Authorization, to a host ending in .azure.com; the deployment from model', async () => {
    const { em, port: at } = await standIn();
    const url = `ws://my-resource.openai.azure.com:${at}/openai/v1/realtime`;
    const { logs, p } = leg(url, { model: 'my-realtime-deployment' });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the session');
    expect(conn.record.path).toBe('/openai/v1/realtime');
    expect(conn.record.key_via).toEqual(['api-key']);
    expect(conn.record.model).toBe('my-realtime-deployment');
    expect(p.failures).toEqual([]);
    expect(JSON.stringify(logs.lines)).not.toContain(KEY);
  });

  it('keeps the deployment a copied Azure URL names, on a Cognitive Services host too', async () => {
    const { em, port: at } = await standIn();
    leg(`ws://my-resource.cognitiveservices.azure.com:${at}/openai/v1/realtime?model=copied-deployment`, {
      model: 'other',
    });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the session');
    expect(conn.record.key_via).toEqual(['api-key']);
    expect(conn.record.model).toBe('copied-deployment');
  });

  it('sends Authorization: Bearer, and no api-key, to any other host', async () => {
    const { em, port: at } = await standIn();
    const { logs } = leg(`ws://realtime.example.test:${at}/v1/realtime?model=gpt-realtime`);
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the session');
    expect(conn.record.path).toBe('/v1/realtime');
    expect(conn.record.key_via).toEqual(['bearer']);
    expect(JSON.stringify(logs.lines)).not.toContain(KEY);
  });

  it('logs a refused Azure handshake without the key', async () => {
    const { em, port: at } = await standIn();
    em.failNextConnects(401, 1);
    const { logs, p } = leg(`ws://my-resource.openai.azure.com:${at}/openai/v1/realtime?model=d`);
    await waitFor(() => p.failures.length > 0, 5_000, 'the give-up');
    expect(logs.find(/bot refused the connection/).map((l) => l.status)).toEqual([401]);
    expect(JSON.stringify(logs.lines)).not.toContain(KEY);
  });

  it('tells Azure hosts by the name ending in .azure.com, and adds model only where the URL names no model or deployment', () => {
    for (const u of [
      'wss://r.openai.azure.com/openai/v1/realtime',
      'wss://r.cognitiveservices.azure.com/openai/v1/realtime',
      'wss://R.OPENAI.AZURE.COM/openai/v1/realtime',
      'wss://r.openai.azure.com:443/openai/v1/realtime',
    ])
      expect(isAzureHost(u), u).toBe(true);
    for (const u of [
      'wss://api.openai.com/v1/realtime',
      'wss://evilazure.com/openai/v1/realtime',
      'wss://r.openai.azure.com.evil.example/openai/v1/realtime',
      'wss://azure.com/openai/v1/realtime',
      'wss://user@evil.example/?host=x.azure.com',
      'not a url',
    ])
      expect(isAzureHost(u), u).toBe(false);
    expect(realtimeUrl('wss://r.openai.azure.com/openai/v1/realtime', 'dep')).toBe(
      'wss://r.openai.azure.com/openai/v1/realtime?model=dep',
    );
    const older = 'wss://r.openai.azure.com/openai/realtime?api-version=2025-04-01-preview&deployment=dep';
    expect(realtimeUrl(older, 'gpt-realtime')).toBe(older);
    expect(realtimeUrl('wss://api.openai.com/v1/realtime?model=a', 'b')).toBe(
      'wss://api.openai.com/v1/realtime?model=a',
    );
  });
});
