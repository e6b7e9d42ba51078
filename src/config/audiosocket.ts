/**
 * The AudioSocket listener's settings (AUDIOSOCKET_*): off unless AUDIOSOCKET_PORT is set; the tenant
 * its calls belong to; the addresses it takes connections from (empty: none).
 */
import proxyAddr from '@fastify/proxy-addr';
import type { VarName } from './spec.js';

export interface AudioSocketConfig {
  /** Undefined: no listener. */
  readonly port: number | undefined;
  readonly host: string;
  readonly tenant: string;
  readonly allow: readonly string[];
}

const TENANT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ALLOW_ACCEPTS =
  'a comma-separated list of addresses or CIDR ranges (or loopback, linklocal, uniquelocal)';

export function audioSocketConfig(
  read: (name: VarName) => string | undefined,
  host: string,
  problems: string[],
): AudioSocketConfig {
  const rawPort = (read('AUDIOSOCKET_PORT') ?? '').trim();
  let port: number | undefined;
  if (rawPort !== '') {
    port = /^\d{1,5}$/.test(rawPort) ? Number(rawPort) : Number.NaN;
    if (!(port >= 0 && port <= 65_535)) {
      problems.push(`AUDIOSOCKET_PORT must be a port, 0 to 65535, got ${JSON.stringify(rawPort)}`);
      port = undefined;
    }
  }
  const tenant = (read('AUDIOSOCKET_TENANT') ?? '').trim() || 'default';
  if (!TENANT.test(tenant))
    problems.push(
      `AUDIOSOCKET_TENANT must be a tenant id (1 to 64 letters, digits or "._-", starting with a letter or digit), got ${JSON.stringify(tenant)}`,
    );
  const rawAllow = (read('AUDIOSOCKET_ALLOW') ?? '').trim();
  let allow: readonly string[] = [];
  if (rawAllow !== '') {
    const list = rawAllow.split(',').map((s) => s.trim());
    try {
      if (list.some((s) => s === '')) throw new Error('an empty entry');
      proxyAddr.compile(list);
      allow = Object.freeze(list);
    } catch (err) {
      problems.push(
        `AUDIOSOCKET_ALLOW must be ${ALLOW_ACCEPTS}: ${(err as Error).message}, got ${JSON.stringify(rawAllow)}`,
      );
    }
  }
  return { port, host: (read('AUDIOSOCKET_HOST') ?? '').trim() || host, tenant, allow };
}
