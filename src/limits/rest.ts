/**
 * Rate limits on the REST control plane, per client address, run before anything else a request
 * meets (its route's token check included):
 * - every request counts against REST_RATE_LIMIT per REST_RATE_WINDOW_MS (`@fastify/rate-limit`),
 *   whether it then authenticates or not, and unknown paths too;
 * - every 401 also spends the address's budget of failed authentications (REST_AUTH_FAIL_LIMIT per
 *   minute, `auth-failures.ts`); once it is spent, the address is answered 429 without a token being
 *   verified until its minute ends, a valid token included: which token is valid is only known by
 *   verifying it, and that is the work the budget bounds.
 * Health, readiness, metrics and the API docs are left out of both: probes and scrapers must never be
 * locked out by a busy or hostile client. A refusal is 429 with the contract's error body and Retry-After.
 */
import rateLimit, { normalizeIP, type RateLimitOptions } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Clock, systemClock } from '../clock.js';
import { BridgeError } from '../errors.js';
import { type AuthFailureLimiter, createAuthFailureLimiter } from './auth-failures.js';
import { windowStore } from './window-store.js';

export interface RestLimitOptions {
  /** Requests per address per window. */
  readonly max: number;
  readonly windowMs: number;
  /** Failed authentications (401s) per address per minute. */
  readonly authFailMax: number;
  /** Where both limits' windows are read from: the system clock unless a test drives its own. */
  readonly clock?: Pick<Clock, 'now'> | undefined;
}

const UNLIMITED = /^\/(healthz|readyz|metrics|docs)(\/|\?|$)/;

/** The key both limits count under: the client address, an IPv6 one by its /64 (a site's usual range). */
const addressKey = (req: FastifyRequest): string => normalizeIP(req.ip);

type Hook = ReturnType<FastifyInstance['rateLimit']>;

/**
 * Registers both limits as the app's first `onRequest` hooks; call before the routes are added. A route
 * may set its own `config.rateLimit` (`max`, `timeWindow`), counted apart from the general one.
 */
export async function registerRestRateLimit(
  app: FastifyInstance,
  o: RestLimitOptions,
): Promise<AuthFailureLimiter> {
  await app.register(rateLimit, {
    // Not hooked route by route: the plugin appends its hook after the route's own `onRequest` (the
    // token check), so a request refused with 401 was never counted. The app-level hook below runs first.
    global: false,
    max: o.max,
    timeWindow: o.windowMs,
    // In memory, one entry per address, evicting the least recently seen past 10,000: a key and a small
    // record each, about a megabyte in all; and a client spread over more addresses than this is not
    // held back by a per-address limit anyway. Ours rather than the plugin's so it reads `o.clock`.
    store: windowStore(o.clock ?? systemClock, 10_000),
    // Thrown into the app's error handler, which answers with the error's status and body.
    errorResponseBuilder: (_req, ctx) =>
      new BridgeError(
        'too_many_requests',
        `too many requests from this address: at most ${ctx.max} per ${ctx.after} (REST_RATE_LIMIT, REST_RATE_WINDOW_MS); retry after ${ctx.after}`,
      ),
  });
  const general: Hook = app.rateLimit();
  const ownLimits = new WeakMap<RateLimitOptions, Hook>();
  const limitOf = (req: FastifyRequest): Hook => {
    const own = req.routeOptions.config.rateLimit;
    if (own === undefined || own === false) return general;
    const known = ownLimits.get(own);
    if (known !== undefined) return known;
    const hook = app.rateLimit(own);
    ownLimits.set(own, hook);
    return hook;
  };

  const failures = createAuthFailureLimiter({ max: o.authFailMax, clock: o.clock });
  const spent = (wait: number) =>
    new BridgeError(
      'too_many_requests',
      `too many failed authentications from this address: at most ${failures.max} per minute (REST_AUTH_FAIL_LIMIT); retry after ${wait} s`,
    );
  app.addHook('onRequest', async (req, reply) => {
    if (UNLIMITED.test(req.url)) return;
    await limitOf(req).call(app, req, reply);
    const wait = failures.refusal(addressKey(req));
    if (wait !== undefined) {
      reply.header('retry-after', wait);
      throw spent(wait);
    }
  });
  // Counted as the answer leaves, whichever check refused it (bearer token, webhook secret). Requests
  // let in before the budget ran out may still fail after it (their signatures were being checked, off
  // the main thread, as others failed): they are answered 429 too, so an address sees at most the
  // budget's worth of 401s a minute, and none after its first 429.
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode !== 401) return payload;
    const key = addressKey(req);
    if (failures.fail(key) <= failures.max) return payload;
    const wait = failures.refusal(key) ?? 1;
    reply.code(429).header('retry-after', wait).header('content-type', 'application/json; charset=utf-8');
    return JSON.stringify(spent(wait).toBody());
  });
  return failures;
}
