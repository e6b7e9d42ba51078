/**
 * Rate limits on the REST control plane (`@fastify/rate-limit`), per client address. Health, readiness,
 * metrics and the API docs are left out: probes and scrapers must never be locked out by a busy client.
 * A refusal is 429 with the contract's error body and Retry-After.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { BridgeError } from '../errors.js';

export interface RestLimitOptions {
  /** Requests per address per window. */
  readonly max: number;
  readonly windowMs: number;
}

const UNLIMITED = /^\/(healthz|readyz|metrics|docs)(\/|\?|$)/;

/** Registers the limiter; call before the routes are added so it hooks each of them. */
export async function registerRestRateLimit(app: FastifyInstance, o: RestLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    max: o.max,
    timeWindow: o.windowMs,
    // The in-memory store keeps one entry per address, evicting the least recently used past this.
    cache: 10_000,
    allowList: (req) => UNLIMITED.test(req.url),
    // Thrown into the app's error handler, which answers with the error's status and body.
    errorResponseBuilder: (_req, ctx) =>
      new BridgeError(
        'too_many_requests',
        `too many requests from this address: at most ${ctx.max} per ${ctx.after} (REST_RATE_LIMIT, REST_RATE_WINDOW_MS); retry after ${ctx.after}`,
      ),
  });
}
