/**
 * The connections to Redis of one instance: one for commands, one for pub/sub (a subscribed connection
 * can do nothing else). Commands never queue while Redis is away: they fail at once with
 * `store_unavailable` (503, naming the store), so the control plane answers fast and nothing piles up.
 * Reconnection runs in the background with doubling backoff; every (re)connect calls the `onReady`
 * hooks, which re-send what this instance owns and re-read what it caches (messages sent while it was
 * away are lost with pub/sub).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis, type RedisOptions } from 'ioredis';
import { BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { StoreMetrics } from './store-metrics.js';

/** First reconnection delay; doubles per failed attempt up to RECONNECT_MAX_MS. */
const RECONNECT_BASE_MS = 100;
/** Bounds how long the store stays away after Redis is back. */
const RECONNECT_MAX_MS = 2_000;
/** A Redis that accepts the connection but stops answering must not hold a request for long. */
const COMMAND_TIMEOUT_MS = 2_000;
/** A Redis beside the bridge connects in milliseconds; 2 s is a lost one, and reconnection takes over. */
const CONNECT_TIMEOUT_MS = 2_000;

export type MessageHandler = (message: Record<string, unknown>) => void;

export class RedisLink {
  /** This process among the instances sharing the store (owner of the sessions it holds). */
  readonly instanceId = randomUUID();
  readonly prefix: string;
  /** "Redis at host:port", never the credentials. */
  readonly label: string;
  readonly channel: string;
  readonly #cmd: Redis;
  readonly #sub: Redis;
  readonly #log: Logger;
  readonly #metrics: StoreMetrics;
  readonly #readyHooks: (() => void)[] = [];
  readonly #handlers: MessageHandler[] = [];
  #closed = false;

  constructor(url: string, prefix: string, log: Logger, metrics: StoreMetrics) {
    const u = new URL(url);
    this.label = `Redis at ${u.hostname}:${u.port || '6379'}`;
    this.prefix = prefix;
    this.channel = `${prefix}events`;
    this.#log = log.child({ component: 'state', store: this.label });
    this.#metrics = metrics;
    const options: RedisOptions = {
      connectionName: `voicebridge-${this.instanceId.slice(0, 8)}`,
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: COMMAND_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      retryStrategy: (times) => {
        metrics.reconnects.inc();
        return Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** Math.min(times - 1, 10));
      },
    };
    this.#cmd = new Redis(url, { ...options, enableOfflineQueue: false });
    // The subscriber queues its SUBSCRIBE until connected; ioredis re-subscribes after each reconnect.
    this.#sub = new Redis(url, { ...options, commandTimeout: undefined, enableOfflineQueue: true });
    metrics.up.set(0);

    this.#cmd.on('ready', () => {
      metrics.up.set(1);
      this.#log.info('state store connected');
      for (const hook of this.#readyHooks) hook();
    });
    this.#cmd.on('close', () => metrics.up.set(0));
    this.#cmd.on('end', () => metrics.up.set(0));
    // ioredis reports each failed attempt; one warning per outage is enough for a person.
    let warned = false;
    this.#cmd.on('error', (err: Error) => {
      if (!warned && !this.#closed) this.#log.warn({ err: err.message }, 'state store unavailable; retrying');
      warned = true;
    });
    this.#cmd.on('ready', () => {
      warned = false;
    });
    this.#sub.on('error', () => {});
    this.#sub.on('message', (_channel: string, text: string) => {
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch {
        return;
      }
      if (msg === null || typeof msg !== 'object') return;
      for (const h of this.#handlers) h(msg as Record<string, unknown>);
    });
    this.#sub.subscribe(this.channel).catch((err: unknown) => {
      if (!this.#closed) this.#log.warn({ err: (err as Error).message }, 'state store subscribe failed');
    });
  }

  get up(): boolean {
    return this.#cmd.status === 'ready';
  }

  /** Runs `hook` after every (re)connection, and now if connected. */
  onReady(hook: () => void): void {
    this.#readyHooks.push(hook);
    if (this.up) hook();
  }

  onMessage(handler: MessageHandler): void {
    this.#handlers.push(handler);
  }

  /** Resolves true once connected, false after `timeoutMs` (reconnection goes on in the background). */
  async waitReady(timeoutMs: number): Promise<boolean> {
    if (this.up) return true;
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.#cmd.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.#cmd.on('ready', onReady);
    });
  }

  unavailable(op: string, detail?: string): BridgeError {
    return new BridgeError(
      'store_unavailable',
      `the state store (${this.label}) is unavailable${detail === undefined ? '' : `: ${detail}`}; ${op} needs it, try again shortly`,
    );
  }

  /**
   * Runs one operation against Redis: at once `store_unavailable` when disconnected, and any failure
   * counted under `op` and turned into `store_unavailable`.
   */
  async run<T>(op: string, fn: (redis: Redis) => Promise<T>): Promise<T> {
    if (!this.up) {
      this.#metrics.errors.labels(op).inc();
      throw this.unavailable(op, 'not connected');
    }
    const t0 = performance.now();
    try {
      return await fn(this.#cmd);
    } catch (err) {
      this.#metrics.errors.labels(op).inc();
      throw this.unavailable(op, (err as Error).message);
    } finally {
      this.#metrics.opSeconds.labels(op).observe((performance.now() - t0) / 1000);
    }
  }

  /** Tells every instance (this one too) about a change; the message carries no secrets. */
  async publish(op: string, message: Record<string, unknown>): Promise<void> {
    await this.run(op, (r) => r.publish(this.channel, JSON.stringify({ ...message, from: this.instanceId })));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([quit(this.#cmd), quit(this.#sub)]);
    this.#metrics.up.set(0);
  }
}

/** QUIT when connected (pending replies still arrive), else just stop reconnecting. */
async function quit(r: Redis): Promise<void> {
  if (r.status === 'ready') {
    try {
      await r.quit();
      return;
    } catch {}
  }
  r.disconnect(false);
}
