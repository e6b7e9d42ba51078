/**
 * Several real bridge processes sharing one Redis, with a provider emulator (in this process) as their
 * upstream, for the scale-out tests.
 */
import { performance } from 'node:perf_hooks';
import { mintToken } from '../../src/auth/jwt.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import type { BridgeProcess } from '../helpers/bridge-process.js';
import { TestProvider } from '../helpers/provider.js';
import type { TestRedis } from '../helpers/redis.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';

export const AUTH_SECRET = 'cluster-test-auth-secret';
export const MEDIA_SECRET = 'cluster-test-media-secret';
const EMULATOR_SECRET = 'cluster-test-emulator-secret';
const SCOPES = ['media:manage', 'sessions:read', 'calls:control'];

export interface Cluster {
  readonly bridges: BridgeProcess[];
  readonly emulator: Emulator;
  restToken(tenant?: string): Promise<string>;
  mediaToken(secret?: string): Promise<string>;
  close(): Promise<void>;
}

export async function startCluster(
  redis: TestRedis,
  envs: Record<string, string>[],
  common: Record<string, string> = {},
): Promise<Cluster> {
  const emulator = await createEmulator({
    jwtSecret: EMULATOR_SECRET,
    acceptAnySession: true,
    log: createLogger('silent'),
  });
  const emulatorUrl = await emulator.listen(0);
  const providerToken = await mintToken({ secret: EMULATOR_SECRET, scopes: SCOPES });
  // A fresh prefix per cluster: tests sharing CI's Redis never see each other's keys.
  const prefix = `test-${process.pid}-${Math.random().toString(36).slice(2, 8)}:`;
  const started = await Promise.allSettled(
    envs.map((env) =>
      startRig({
        process: true,
        env: {
          STATE_STORE: redis.url,
          STATE_KEY_PREFIX: prefix,
          AUTH_JWT_SECRET: AUTH_SECRET,
          MEDIA_SECRET,
          PROVIDER_BASE_URL: `${emulatorUrl}/v1`,
          PROVIDER_TOKEN: providerToken,
          ...common,
          ...env,
        },
      }),
    ),
  );
  const rigs = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const bridges = rigs.map((r: ProcessRig) => r.process);
  const close = async () => {
    await Promise.all(rigs.map((r) => r.close()));
    await emulator.close();
  };
  const failed = started.find((r) => r.status === 'rejected');
  if (failed !== undefined) {
    await close();
    throw (failed as PromiseRejectedResult).reason;
  }
  return {
    bridges,
    emulator,
    restToken: (tenant) =>
      mintToken({ secret: AUTH_SECRET, scopes: SCOPES, ...(tenant !== undefined ? { tenant } : {}) }),
    mediaToken: (secret = MEDIA_SECRET) => mintToken({ secret, ttlSeconds: 600 }),
    close,
  };
}

export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

export async function rest(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

export interface ListedSession {
  session_id: string;
  customer_phone?: string;
  direction?: string;
  started_at: string;
  conferenceNumbers: string[];
}

export async function listIds(base: string, token: string): Promise<Set<string> | undefined> {
  const a = await rest(base, 'GET', '/v1/sessions', token);
  if (a.status !== 200) return undefined;
  return new Set((a.body as ListedSession[]).map((s) => s.session_id));
}

/** Opens `n` calls on `mediaUrl` and waits until each socket is open and its session_start sent. */
export async function openCalls(mediaUrl: string, token: string, ids: string[]): Promise<TestProvider[]> {
  const calls = ids.map((id) => {
    const p = new TestProvider(mediaUrl, { token });
    return { p, started: p.start(id) };
  });
  await Promise.all(calls.map((c) => c.started));
  return calls.map((c) => c.p);
}

/** Largest gap between consecutive audio chunks that arrived within [from, to] (performance.now()). */
export function maxGapMs(p: TestProvider, from: number, to: number = performance.now()): number {
  let prev: number | undefined;
  let max = 0;
  for (const a of p.audio) {
    if (a.at < from || a.at > to) continue;
    if (prev !== undefined) max = Math.max(max, a.at - prev);
    prev = a.at;
  }
  // A call that sent nothing in the window paused for all of it.
  return prev === undefined ? to - from : max;
}
