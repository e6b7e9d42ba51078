/**
 * Webhook posts to the integrator's URL: a bounded number in flight over a keep-alive undici Agent, so a
 * 1,000-recipient campaign does not open 1,000 sockets; a non-2xx answer or a connection error is
 * retried with doubling backoff, then the post is dropped and counted. A webhook token, when set, goes
 * in the Authorization header.
 */
import { Agent, request } from 'undici';
import type { Logger } from '../../log.js';
import type { WebhookStats } from './state.js';

export interface WebhookOptions {
  /** Posts in flight at once. */
  readonly concurrency: number;
  /** Attempts per post, the first included. */
  readonly maxAttempts: number;
  /** Wait before the second attempt; doubled before each one after. */
  readonly backoffMs: number;
  readonly stats: WebhookStats;
  readonly url: () => string | undefined;
  /** Sent as `Authorization: Bearer <token>` when set. */
  readonly token: () => string | undefined;
  readonly log: Logger;
}

interface Post {
  readonly body: string;
  attempts: number;
}

/** Posts waiting beyond this are dropped (and counted): a receiver that is down must not grow memory. */
const MAX_QUEUED = 100_000;
/** A receiver that does not answer in 10 s counts as a failed attempt. */
const ATTEMPT_TIMEOUT_MS = 10_000;

export class WebhookPoster {
  readonly #o: WebhookOptions;
  readonly #queue: Post[] = [];
  #head = 0;
  #inFlight = 0;
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #agent: Agent;
  readonly #abort = new AbortController();
  #closed = false;

  constructor(o: WebhookOptions) {
    this.#o = o;
    this.#agent = new Agent({
      connections: o.concurrency,
      keepAliveTimeout: 10_000,
      // A loopback development tool: answers are small, receivers local.
      headersTimeout: ATTEMPT_TIMEOUT_MS,
      bodyTimeout: ATTEMPT_TIMEOUT_MS,
    });
  }

  /** Posts waiting, in flight or waiting for a retry. */
  get pending(): number {
    return this.#queue.length - this.#head + this.#inFlight + this.#timers.size;
  }

  post(payload: unknown): void {
    if (this.#closed || this.#o.url() === undefined) return;
    if (this.#queue.length - this.#head >= MAX_QUEUED) {
      this.#o.stats.dropped++;
      return;
    }
    this.#queue.push({ body: JSON.stringify(payload), attempts: 0 });
    this.#pump();
  }

  #pump(): void {
    while (!this.#closed && this.#inFlight < this.#o.concurrency && this.#head < this.#queue.length) {
      const p = this.#queue[this.#head++]!;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue.splice(0, this.#head);
        this.#head = 0;
      }
      this.#inFlight++;
      void this.#attempt(p).finally(() => {
        this.#inFlight--;
        this.#pump();
      });
    }
  }

  async #attempt(p: Post): Promise<void> {
    const url = this.#o.url();
    if (url === undefined) return;
    p.attempts++;
    this.#o.stats.attempted++;
    const token = this.#o.token();
    let ok = false;
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.#agent,
        headers: {
          'content-type': 'application/json',
          ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
        },
        body: p.body,
        signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]),
      });
      await res.body.dump();
      ok = res.statusCode >= 200 && res.statusCode < 300;
    } catch (err) {
      if (!this.#closed) this.#o.log.debug({ err }, 'webhook post failed');
    }
    if (ok) {
      this.#o.stats.succeeded++;
      return;
    }
    this.#o.stats.failed++;
    if (this.#closed) return;
    if (p.attempts >= this.#o.maxAttempts) {
      this.#o.stats.dropped++;
      this.#o.log.warn({ attempts: p.attempts }, 'webhook post dropped');
      return;
    }
    const t = setTimeout(
      () => {
        this.#timers.delete(t);
        this.#queue.push(p);
        this.#pump();
      },
      this.#o.backoffMs * 2 ** (p.attempts - 1),
    );
    t.unref();
    this.#timers.add(t);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#queue.length = 0;
    this.#head = 0;
    this.#abort.abort();
    await this.#agent.destroy().catch(() => {});
  }
}
