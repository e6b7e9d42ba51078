/**
 * The one way tests start a bridge: a real bridge on 127.0.0.1 port 0 (in this process, or as a child
 * process with `process: true`), with the peers a test asks for, all of them closed by one `close()`:
 *
 *   await using rig = await startRig({ bot: {}, providers: { voice: {} } });
 *
 * Peers: a test ws bot (`bot`), the OpenAI Realtime stand-in as the calls' bot (`realtime`), the
 * provider emulator for calls and for messaging (`providers`), Redis as the state store (`store`).
 * The rig's defaults (port 0, loopback, silent logs, DSP inline unless TEST_DSP_WORKERS says otherwise)
 * come first, the peers' settings next, and `env` last, so a test can override any of them.
 */
import { type Bridge, type BridgeOptions, createBridge } from '../../src/app.js';
import { mintToken } from '../../src/auth/jwt.js';
import { type Config, DEV_AUTH_JWT_SECRET, DEV_MEDIA_SECRET, loadConfig } from '../../src/config.js';
import type { DialPlan } from '../../src/emulator/dial-plan.js';
import type { MessagingOptions } from '../../src/emulator/messaging/emulator.js';
import {
  createRealtimeEmulator,
  type RealtimeEmulator,
  type RealtimeEmulatorOptions,
} from '../../src/emulator/realtime/server.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger, type Logger } from '../../src/log.js';
import { TestBot } from './bot.js';
import { type BridgeProcess, spawnBridgeProcess } from './bridge-process.js';
import { TestProvider } from './provider.js';
import { type TestRedis, useRedis } from './redis.js';
import { bridgeStartedHere } from './schedstat.js';

type TestProviderOptions = NonNullable<ConstructorParameters<typeof TestProvider>[1]>;

/** The secret the rig's provider emulator verifies the bridge's PROVIDER_TOKEN with. */
export const RIG_EMULATOR_SECRET = 'rig-test-emulator-secret';
const PROVIDER_SCOPES = ['media:manage', 'sessions:read', 'calls:control'];

export interface VoiceProviderOptions {
  readonly dialPlan?: DialPlan;
  readonly dialTimeoutMs?: number;
  /** Call control for any session id (a cluster's emulator cannot look into child processes). */
  readonly acceptAnySession?: boolean;
  /** The secret the emulator verifies the bridge's token with (default RIG_EMULATOR_SECRET). */
  readonly jwtSecret?: string;
}

export interface RigOptions {
  /** Environment for the bridge, over the rig's defaults and its peers' settings. */
  readonly env?: Record<string, string>;
  /** Fields over the loaded config (in-process only), for settings with no variable. */
  readonly config?: Partial<Config>;
  /** A test ws bot as BOT_URL (echoing audio back unless `echo: false`). */
  readonly bot?: { readonly echo?: boolean };
  /** The OpenAI Realtime stand-in as the calls' bot (BOT_DIALECT openai-realtime). */
  readonly realtime?: RealtimeEmulatorOptions;
  /** The provider emulator: its voice API as PROVIDER_BASE_URL, its messaging API as MESSAGING_BASE_URL. */
  readonly providers?: { readonly voice?: VoiceProviderOptions; readonly messaging?: MessagingOptions };
  /** Redis as the state store, under a key prefix of its own: CI's or a redis-server child, or the one given. */
  readonly store?: 'redis' | TestRedis;
  /**
   * The bridge's log: a logger, or a level whose lines are kept in `logs` (in-process); a child
   * process logs at `warn` unless `env` says otherwise, its output in `output()`.
   */
  readonly log?: Logger | string;
  /** Start `tsx src/cli/main.ts` as a child process instead of a bridge in this process. */
  readonly process?: boolean;
  /** In-process only: the bridge's clients, pipeline and limit clock (see BridgeOptions). */
  readonly bridgeOptions?: Omit<BridgeOptions, 'log'>;
  /** How long a child process may take to print its banner (default 20 s). */
  readonly startTimeoutMs?: number;
  /** A child process's Node options (e.g. `--trace-gc`). */
  readonly nodeArgs?: readonly string[];
}

interface RigBase extends AsyncDisposable {
  /** The bridge, e.g. `http://127.0.0.1:40123`. */
  readonly http: string;
  /** Its media endpoint, `ws://…/v1/media`. */
  readonly mediaUrl: string;
  readonly bot: TestBot | undefined;
  readonly realtime: RealtimeEmulator | undefined;
  readonly emulator: Emulator | undefined;
  /** The emulator without `/v1`. */
  readonly emulatorUrl: string | undefined;
  readonly redis: TestRedis | undefined;
  /** The environment the bridge was started with (the rig's, its peers' and the test's). */
  readonly env: Readonly<Record<string, string>>;
  /** A media token for `tenant` (default: tenant "default") signed with the bridge's media secret. */
  mediaToken(options?: { tenant?: string; ttlSeconds?: number; secret?: string }): Promise<string>;
  /** A REST bearer token with `scopes` signed with the bridge's AUTH_JWT_SECRET. */
  restToken(scopes: string[], tenant?: string): Promise<string>;
  /** A provider call on the bridge, started as `sessionId` (closed with the rig). */
  call(
    sessionId: string,
    o?: { start?: Record<string, unknown>; provider?: TestProviderOptions },
  ): Promise<TestProvider>;
  /** Closes the calls, the bridge, then its peers. Safe to call twice. */
  close(): Promise<void>;
}

export interface InProcessRig extends RigBase {
  readonly bridge: Bridge;
  readonly config: Config;
  /** The bridge's log lines (JSON) when `log` was a level. */
  readonly logs: string[];
}

export interface ProcessRig extends RigBase {
  readonly process: BridgeProcess;
  /** A metric's value from GET /metrics, summed over its series, or over those with `label`. */
  metric(name: string, label?: readonly [string, string]): Promise<number>;
  /** The child's JSON log lines so far (at LOG_LEVEL, `warn` unless `env` says otherwise). */
  logLines(): Record<string, unknown>[];
}

export type Rig = InProcessRig | ProcessRig;

export function startRig(o: RigOptions & { process: true }): Promise<ProcessRig>;
export function startRig(o?: RigOptions & { process?: false }): Promise<InProcessRig>;
export async function startRig(o: RigOptions = {}): Promise<Rig> {
  // Everything started so far, closed last first if a later step fails or the rig closes.
  const closers: (() => Promise<unknown> | unknown)[] = [];
  const closeAll = async () => {
    for (const c of closers.splice(0).reverse()) await c();
  };
  try {
    const peers: Record<string, string> = {};
    let bot: TestBot | undefined;
    if (o.bot !== undefined) {
      bot = await TestBot.start(o.bot.echo === undefined ? {} : { echo: o.bot.echo });
      closers.push(() => bot!.close());
      peers.BOT_URL = bot.url;
    }
    let realtime: RealtimeEmulator | undefined;
    if (o.realtime !== undefined) {
      const rt = createRealtimeEmulator(o.realtime);
      realtime = rt;
      await rt.listen(0, '127.0.0.1');
      closers.push(() => rt.close());
      Object.assign(peers, {
        BOT_URL: rt.wsUrl('gpt-realtime'),
        BOT_DIALECT: 'openai-realtime',
        BOT_API_KEY: o.realtime.apiKey ?? 'sk-test-key',
      });
    }
    let emulator: Emulator | undefined;
    let emulatorUrl: string | undefined;
    let bridgeRef: Bridge | undefined;
    if (o.providers !== undefined) {
      const voice = o.providers.voice;
      const secret = voice?.jwtSecret ?? RIG_EMULATOR_SECRET;
      const em = await createEmulator({
        jwtSecret: secret,
        log: createLogger('silent'),
        ...(voice?.dialPlan === undefined ? {} : { dialPlan: voice.dialPlan }),
        ...(voice?.dialTimeoutMs === undefined ? {} : { dialTimeoutMs: voice.dialTimeoutMs }),
        ...(voice?.acceptAnySession === undefined ? {} : { acceptAnySession: voice.acceptAnySession }),
        // As in `npm start`: call control for the calls an in-process bridge holds.
        ...(o.process === true
          ? {}
          : { lookupSession: async (tenant, id) => bridgeRef?.ctx.sessions.get(tenant, id) }),
        ...(o.providers.messaging === undefined ? {} : { messaging: o.providers.messaging }),
      });
      emulator = em;
      emulatorUrl = await em.listen(0, '127.0.0.1');
      closers.push(() => em.close());
      if (voice !== undefined) {
        peers.PROVIDER_BASE_URL = `${emulatorUrl}/v1`;
        peers.PROVIDER_TOKEN = await mintToken({ secret, scopes: PROVIDER_SCOPES });
      }
      if (o.providers.messaging !== undefined) {
        peers.MESSAGING_BASE_URL = `${emulatorUrl}/v1`;
        peers.MESSAGING_TOKEN = em.messaging.defaultApiKey;
      }
    }
    let redis: TestRedis | undefined;
    if (o.store !== undefined) {
      const r = o.store === 'redis' ? await useRedis() : o.store;
      redis = r;
      if (o.store === 'redis') closers.push(() => r.stop());
      peers.STATE_STORE = r.url;
      // A fresh prefix per rig: tests sharing CI's Redis never see each other's keys.
      peers.STATE_KEY_PREFIX = `test-${process.pid}-${Math.random().toString(36).slice(2, 8)}:`;
    }

    const env: Record<string, string> = {
      PORT: '0',
      HOST: '127.0.0.1',
      // Inline unless the run asks for workers (CI runs the media tests once more with TEST_DSP_WORKERS=1).
      DSP_WORKERS: process.env.TEST_DSP_WORKERS ?? '0',
      ...peers,
      ...o.env,
    };
    const mediaSecret = env.MEDIA_SECRET ?? DEV_MEDIA_SECRET;
    const authSecret = env.AUTH_JWT_SECRET ?? DEV_AUTH_JWT_SECRET;
    const providers: TestProvider[] = [];
    // Pushed after the bridge's closer, so the calls end first.
    const closeCalls = () => {
      for (const p of providers.splice(0)) p.close();
    };

    let closed = false;
    const base = {
      bot,
      realtime,
      emulator,
      emulatorUrl,
      redis,
      env,
      mediaToken: (t: { tenant?: string; ttlSeconds?: number; secret?: string } = {}) =>
        mintToken({
          secret: t.secret ?? mediaSecret,
          ttlSeconds: t.ttlSeconds ?? 600,
          ...(t.tenant !== undefined ? { tenant: t.tenant } : {}),
        }),
      restToken: (scopes: string[], tenant?: string) =>
        mintToken({ secret: authSecret, scopes, ...(tenant !== undefined ? { tenant } : {}) }),
      async close() {
        if (closed) return;
        closed = true;
        await closeAll();
      },
      async [Symbol.asyncDispose]() {
        await this.close();
      },
    };
    const call = async (
      mediaUrl: string,
      sessionId: string,
      c: { start?: Record<string, unknown>; provider?: TestProviderOptions } = {},
    ) => {
      const p = new TestProvider(mediaUrl, { token: await base.mediaToken(), ...c.provider });
      providers.push(p);
      await p.start(sessionId, c.start === undefined ? {} : { media: c.start });
      return p;
    };

    if (o.process === true) {
      const child = await spawnBridgeProcess(
        { LOG_LEVEL: 'warn', ...env },
        o.startTimeoutMs ?? 20_000,
        o.nodeArgs ?? [],
      );
      // The bridge closes before its peers (pushed last, closed first).
      closers.push(() => child.kill('SIGTERM'), closeCalls);
      const mediaUrl = `${child.http.replace('http', 'ws')}/v1/media`;
      return {
        ...base,
        http: child.http,
        mediaUrl,
        process: child,
        call: (id, c) => call(mediaUrl, id, c),
        metric: async (name, label) =>
          scrapeMetric(await (await fetch(`${child.http}/metrics`)).text(), name, label),
        logLines: () => jsonLines(child.output()),
      };
    }

    const loaded = loadConfig({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json', ...env });
    const config: Config = o.config === undefined ? loaded : Object.freeze({ ...loaded, ...o.config });
    const logs: string[] = [];
    const log =
      typeof o.log === 'string'
        ? createLogger(o.log, { write: (line: string) => void logs.push(line) })
        : o.log;
    // From here until it has closed, this process's stalls are the bridge's too (schedstat.ts).
    closers.push(bridgeStartedHere());
    const bridge = await createBridge(config, { ...o.bridgeOptions, ...(log === undefined ? {} : { log }) });
    bridgeRef = bridge;
    closers.push(() => bridge.close(), closeCalls);
    const http = await bridge.listen();
    const mediaUrl = `${http.replace('http', 'ws')}/v1/media`;
    return { ...base, bridge, config, logs, http, mediaUrl, call: (id, c) => call(mediaUrl, id, c) };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** A metric's value in Prometheus text: the sum of its samples, or of those whose labels hold `label`. */
export function scrapeMetric(text: string, name: string, label?: readonly [string, string]): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    if (label !== undefined && !(m[2] ?? '').includes(`${label[0]}="${label[1]}"`)) continue;
    sum += Number(m[3]);
  }
  return sum;
}

/** The JSON lines of a child's output (the banner and anything else skipped). */
function jsonLines(out: string): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  for (const line of out.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {}
  }
  return lines;
}
