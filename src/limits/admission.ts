/**
 * Admission of media WebSocket upgrades, decided before the upgrade so a refused peer costs one HTTP
 * answer and no socket: a cap on connection attempts per client address per second (429), and a cap on
 * live connections (503). A provider opens one socket per call, so either cap is the line between a busy
 * provider and a runaway one; both are configuration (MEDIA_CONNECT_PER_SEC, MAX_SESSIONS).
 */
import type { IncomingMessage } from 'node:http';
import { Counter, type Registry } from 'prom-client';
import { type Clock, systemClock } from '../clock.js';
import { BridgeError } from '../errors.js';
import { clientAddress, type TrustFn } from './client-address.js';

export interface AdmissionOptions {
  /** Live media connections (sessions and sockets before their session_start) above which upgrades get 503. */
  readonly maxSessions: number;
  /** Upgrade attempts per client address per second above which the address gets 429. */
  readonly connectPerSec: number;
  readonly registry: Registry;
  /** TRUST_PROXY: whose X-Forwarded-For to believe (see client-address.ts); none when undefined. */
  readonly trust?: TrustFn | undefined;
  /** Where the one-second windows are read from: the system clock unless a test drives its own. */
  readonly clock?: Pick<Clock, 'now'> | undefined;
}

/**
 * Addresses tracked in one window. A flood from many addresses could otherwise grow the map without
 * bound within a second; past this the window is treated as full for new addresses (refused), which
 * only bites during such a flood.
 */
const MAX_TRACKED_ADDRESSES = 100_000;

export class Admission {
  readonly #o: AdmissionOptions;
  /** Attempts per address in the current one-second window (a fixed window: cheap and bounded). */
  #attempts = new Map<string, number>();
  #windowStart = Number.NEGATIVE_INFINITY;
  readonly #refused: Counter<'reason'>;

  constructor(options: AdmissionOptions) {
    this.#o = options;
    const name = 'voicebridge_media_refused_total';
    this.#refused =
      (options.registry.getSingleMetric(name) as Counter<'reason'> | undefined) ??
      new Counter({
        name,
        help: 'Media upgrades refused before the upgrade, by reason (rate, capacity)',
        labelNames: ['reason'] as const,
        registers: [options.registry],
      });
  }

  /**
   * Counts this attempt against its address and checks both caps; returns the error to answer with, or
   * undefined to admit. `live` is the number of media connections open or being opened now.
   */
  check(req: IncomingMessage, live: number): BridgeError | undefined {
    return this.checkAddress(clientAddress(req, this.#o.trust), live);
  }

  /** As `check`, for a connection without a request (AudioSocket's TCP): `addr` is its peer's address. */
  checkAddress(addr: string, live: number): BridgeError | undefined {
    const now = (this.#o.clock ?? systemClock).now();
    if (now - this.#windowStart >= 1000) {
      this.#attempts = new Map();
      this.#windowStart = now;
    }
    const seen = this.#attempts.get(addr);
    if (seen === undefined && this.#attempts.size >= MAX_TRACKED_ADDRESSES) {
      this.#refused.inc({ reason: 'rate' });
      return new BridgeError('too_many_requests', 'too many connection attempts; retry in a second');
    }
    const n = (seen ?? 0) + 1;
    this.#attempts.set(addr, n);
    if (n > this.#o.connectPerSec) {
      this.#refused.inc({ reason: 'rate' });
      return new BridgeError(
        'too_many_requests',
        `too many connection attempts from this address: at most ${this.#o.connectPerSec} per second (MEDIA_CONNECT_PER_SEC); retry in a second`,
      );
    }
    if (live >= this.#o.maxSessions) {
      this.#refused.inc({ reason: 'capacity' });
      return new BridgeError(
        'capacity',
        `the bridge is at its limit of ${this.#o.maxSessions} live sessions (MAX_SESSIONS); connect to another instance or retry later`,
      );
    }
    return undefined;
  }
}
