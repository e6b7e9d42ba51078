/**
 * The client address the limits are keyed on. Behind a load balancer every connection comes from the
 * balancer, so one busy caller would lock out everyone: with `TRUST_PROXY` naming the proxies, the
 * address is the nearest one in `X-Forwarded-For` that is not a trusted proxy. REST requests (fastify's
 * `trustProxy`) and media upgrades use the same rule through the same module, `@fastify/proxy-addr`.
 * Without `TRUST_PROXY` the header is ignored: any client could write it.
 */
import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';

/** Whether the hop `i` away (0: the socket's peer) at `addr` is a trusted proxy. */
export type TrustFn = (addr: string, i: number) => boolean;

/**
 * TRUST_PROXY as configured: proxy addresses or CIDR ranges (and proxy-addr's names). Not a hop count:
 * "trust the nearest N hops" trusts whoever connects, so a client reaching the bridge directly could
 * name any address it liked (fastify refuses a numeric trustProxy for the same reason).
 */
export type TrustProxy = readonly string[];

export const TRUST_PROXY_ACCEPTS =
  'a comma-separated list of proxy addresses or CIDR ranges (or loopback, linklocal, uniquelocal)';

/** Parses TRUST_PROXY; undefined when unset, a problem (one line, naming what is accepted) when bad. */
export function parseTrustProxy(raw: string | undefined): TrustProxy | undefined | { problem: string } {
  const v = (raw ?? '').trim();
  if (v === '' || v === 'false') return undefined;
  if (/^\d+$/.test(v)) {
    return {
      problem: `TRUST_PROXY must be ${TRUST_PROXY_ACCEPTS}, not a hop count (that would trust any client connecting directly), got ${v}`,
    };
  }
  const list = v.split(',').map((s) => s.trim());
  if (list.some((s) => s === '' || s === 'true' || s === '*')) {
    return {
      problem: `TRUST_PROXY must be ${TRUST_PROXY_ACCEPTS} (trusting every address would let any client choose its own), got ${JSON.stringify(v)}`,
    };
  }
  try {
    proxyAddr.compile(list);
  } catch (err) {
    return {
      problem: `TRUST_PROXY must be ${TRUST_PROXY_ACCEPTS}: ${JSON.stringify((err as Error).message)}`,
    };
  }
  return Object.freeze(list);
}

/** The trust function for a configured TRUST_PROXY (undefined: trust nothing). */
export function trustFn(trust: TrustProxy | undefined): TrustFn | undefined {
  if (trust === undefined) return undefined;
  return proxyAddr.compile([...trust]);
}

/** The request's client address: the socket's peer, or with `trust` the first untrusted forwarded hop. */
export function clientAddress(req: IncomingMessage, trust: TrustFn | undefined): string {
  if (trust === undefined) return req.socket.remoteAddress ?? 'unknown';
  return proxyAddr(req, trust) ?? 'unknown';
}
