/**
 * The shared state store under load: 3 bridge instances (in this process) on one Redis, 1,000 live
 * sessions spread over them. Reports
 *  - session-list latency: GET /v1/sessions on one instance answering all 1,000 (HTTP, JWT, Redis),
 *    and the registry's list() alone;
 *  - the cost of the heartbeat: wall time and this process's CPU for one round, per session.
 * Redis: REDIS_URL, else a redis-server child on a free loopback port.
 *
 *   npm run bench:state -- [--json] [--sessions 1000] [--instances 3] [--rounds 100]
 */
import { performance } from 'node:perf_hooks';
import { createBridge } from '../src/app.js';
import { mintToken } from '../src/auth/jwt.js';
import { DEV_AUTH_JWT_SECRET, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { RedisSessionRegistry } from '../src/state/redis-sessions.js';
import { useRedis } from '../test/helpers/redis.js';

const argv = process.argv.slice(2);
function arg(name: string, fallback: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
}
const JSON_OUT = argv.includes('--json');
const SESSIONS = Number(arg('sessions', '1000'));
const INSTANCES = Number(arg('instances', '3'));
const ROUNDS = Number(arg('rounds', '100'));

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}
const r2 = (x: number) => Math.round(x * 100) / 100;

const redis = await useRedis();
const prefix = `bench-${process.pid}:`;
const bridges = [];
for (let i = 0; i < INSTANCES; i++) {
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DSP_WORKERS: '0',
    STATE_STORE: redis.url,
    STATE_KEY_PREFIX: prefix,
  });
  bridges.push(await createBridge(config, { log: createLogger('silent') }));
}
try {
  const urls = await Promise.all(bridges.map((b) => b.listen()));
  for (let n = 0; n < SESSIONS; n++) {
    await bridges[n % INSTANCES]!.ctx.sessions.add({
      session_id: `bench-${n}`,
      tenant: 'default',
      customer_phone: `1555${String(n).padStart(7, '0')}`,
      direction: 'inbound',
      started_at: new Date().toISOString(),
      conferenceNumbers: [],
    });
  }
  const token = await mintToken({ secret: DEV_AUTH_JWT_SECRET, scopes: ['sessions:read'] });
  const asking = bridges[0]!;
  // Wait for the background mirror writes of every instance.
  for (const deadline = Date.now() + 10_000; ; ) {
    if ((await asking.ctx.sessions.list('default')).length === SESSIONS) break;
    if (Date.now() > deadline) throw new Error('sessions not mirrored in time');
    await new Promise((r) => setTimeout(r, 50));
  }

  const http: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const res = await fetch(`${urls[0]}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
    const list = (await res.json()) as unknown[];
    http.push(performance.now() - t0);
    if (list.length !== SESSIONS) throw new Error(`listed ${list.length}, expected ${SESSIONS}`);
  }
  const direct: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await asking.ctx.sessions.list('default');
    direct.push(performance.now() - t0);
  }

  const reg = asking.ctx.sessions;
  if (!(reg instanceof RedisSessionRegistry)) throw new Error('not the Redis registry');
  const own = reg.count();
  const beatWall: number[] = [];
  const beatCpu: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await reg.heartbeat();
    beatWall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    beatCpu.push((c.user + c.system) / 1000);
  }
  const result = {
    redis: redis.url,
    instances: INSTANCES,
    sessions: SESSIONS,
    rounds: ROUNDS,
    listHttpMs: { p50: r2(pct(http, 50)), p99: r2(pct(http, 99)) },
    listRegistryMs: { p50: r2(pct(direct, 50)), p99: r2(pct(direct, 99)) },
    heartbeat: {
      sessionsOnInstance: own,
      roundWallMs: { p50: r2(pct(beatWall, 50)), p99: r2(pct(beatWall, 99)) },
      roundCpuMs: { p50: r2(pct(beatCpu, 50)) },
      cpuUsPerSession: r2((pct(beatCpu, 50) * 1000) / own),
      commandsPerSessionPerRound: 2,
      roundsPerSecondAtDefaultTtl: r2(1000 / Math.floor(10_000 / 3)),
    },
  };
  if (JSON_OUT) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else {
    process.stdout.write(
      `${INSTANCES} instances, ${SESSIONS} sessions on ${redis.url}\n` +
        `  GET /v1/sessions (all ${SESSIONS}): p50 ${result.listHttpMs.p50} ms, p99 ${result.listHttpMs.p99} ms\n` +
        `  registry list() alone:        p50 ${result.listRegistryMs.p50} ms, p99 ${result.listRegistryMs.p99} ms\n` +
        `  heartbeat round (${own} sessions): p50 ${result.heartbeat.roundWallMs.p50} ms wall, ` +
        `${result.heartbeat.roundCpuMs.p50} ms CPU = ${result.heartbeat.cpuUsPerSession} µs CPU per session per round (every 3.3 s)\n`,
    );
  }
} finally {
  for (const b of bridges) await b.close();
  await redis.stop();
}
