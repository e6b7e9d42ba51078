/**
 * REST control plane under autocannon, each server in its own process:
 *   - the bridge's `GET /v1/sessions` with 1,000 live sessions;
 *   - the bridge's `POST /v1/sessions/{id}/consult` forwarded to the provider emulator with a dial plan
 *     that answers at once;
 *   - a bare fastify route, for scale.
 *
 *   npm run build && npm run bench:rest -- [--sessions 1000] [--seconds 10] [--connections 10] [--json FILE]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import WebSocket from 'ws';
import { mintToken } from '../src/auth/jwt.js';
import { DEV_AUTH_JWT_SECRET } from '../src/config.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    json: { type: 'string' },
  },
});
const sessions = Number(values.sessions);
const seconds = Number(values.seconds);
const connections = Number(values.connections);

const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

function start(args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function waitUp(url: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const port = (n: number) => 19_000 + (process.pid % 500) * 3 + n;
const emulatorPort = port(0);
const bridgePort = port(1);
const barePort = port(2);

const dir = await mkdtemp(join(tmpdir(), 'voicebridge-bench-'));
const plan = join(dir, 'plan.json');
await writeFile(plan, JSON.stringify({ '100': { dialStatus: 'ANSWER', afterMs: 0 } }));
start(
  [
    '--import',
    'tsx',
    'src/cli/emulator.ts',
    '--port',
    String(emulatorPort),
    '--dial-plan',
    plan,
    '--accept-any-session',
    '--log-level',
    'warn',
  ],
  {},
);
// The emulator accepts tokens signed with the development REST secret (its default).
const providerToken = await mintToken({
  secret: DEV_AUTH_JWT_SECRET,
  scopes: ['media:manage', 'sessions:read', 'calls:control'],
  ttlSeconds: 3600,
});
start(['dist/cli/main.js'], {
  PROVIDER_TOKEN: providerToken,
  PORT: String(bridgePort),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  MEDIA_AUTH: 'none',
  PROVIDER_BASE_URL: `http://127.0.0.1:${emulatorPort}/v1`,
  // The benchmark measures throughput, not the limiter: raise the REST rate limit out of the way.
  REST_RATE_LIMIT: '1000000',
  MEDIA_CONNECT_PER_SEC: '100000',
});
start(
  [
    '--input-type=module',
    '-e',
    `import Fastify from 'fastify'; const app = Fastify(); app.get('/health', async () => ({ status: 'ok' }));` +
      ` await app.listen({ port: ${barePort}, host: '127.0.0.1' });`,
  ],
  {},
);
await waitUp(`http://127.0.0.1:${emulatorPort}/healthz`);
await waitUp(`http://127.0.0.1:${bridgePort}/healthz`);
await waitUp(`http://127.0.0.1:${barePort}/health`);

// Live sessions: real media sockets that sent session_start and stay open.
const sockets: WebSocket[] = [];
for (let i = 0; i < sessions; i += 100) {
  await Promise.all(
    Array.from({ length: Math.min(100, sessions - i) }, (_, k) => {
      const ws = new WebSocket(`ws://127.0.0.1:${bridgePort}/v1/media`);
      sockets.push(ws);
      return new Promise<void>((resolve, reject) => {
        ws.once('error', reject);
        ws.once('open', () => {
          ws.send(
            JSON.stringify({
              event: 'session_start',
              session_id: `rest-bench-${i + k}`,
              customer_phone: '15550100000',
              direction: 'inbound',
              started_at: new Date().toISOString(),
            }),
          );
          resolve();
        });
      });
    }),
  );
}
const token = await mintToken({ secret: DEV_AUTH_JWT_SECRET, scopes: ['sessions:read', 'calls:control'] });
const auth = { authorization: `Bearer ${token}` };
for (const deadline = Date.now() + 10_000; ; ) {
  const res = await fetch(`http://127.0.0.1:${bridgePort}/v1/sessions`, { headers: auth });
  const list = (await res.json()) as unknown[];
  if (list.length === sessions) break;
  if (Date.now() > deadline) throw new Error(`bridge lists ${list.length} sessions, expected ${sessions}`);
  await new Promise((r) => setTimeout(r, 200));
}

// One consult first: the benchmark is only meaningful if the route answers 200.
{
  const res = await fetch(`http://127.0.0.1:${bridgePort}/v1/sessions/rest-bench-7/consult`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ calledParty: '100' }),
  });
  if (res.status !== 200) throw new Error(`consult answered ${res.status}: ${await res.text()}`);
}

interface Row {
  name: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
}

async function run(name: string, opts: autocannon.Options): Promise<Row> {
  const r = await autocannon({ connections, duration: seconds, ...opts });
  const row = {
    name,
    reqPerSec: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    statusCodes: Object.fromEntries(
      Object.entries(r.statusCodeStats as Record<string, { count: number }>).map(([k, v]) => [k, v.count]),
    ),
  };
  process.stderr.write(`${JSON.stringify(row)}\n`);
  return row;
}

const rows: Row[] = [];
rows.push(await run('bare fastify GET /health', { url: `http://127.0.0.1:${barePort}/health` }));
rows.push(await run('bridge GET /healthz', { url: `http://127.0.0.1:${bridgePort}/healthz` }));
rows.push(
  await run(`bridge GET /v1/sessions (${sessions} live)`, {
    url: `http://127.0.0.1:${bridgePort}/v1/sessions`,
    headers: auth,
  }),
);
rows.push(
  await run('bridge GET /v1/sessions/{id}', {
    url: `http://127.0.0.1:${bridgePort}/v1/sessions/rest-bench-7`,
    headers: auth,
  }),
);
// Consults rotate over the live sessions: a session has one consult at a time, as on a real call.
let next = 0;
rows.push(
  await run('bridge POST consult -> emulator (answers at once)', {
    url: `http://127.0.0.1:${bridgePort}`,
    requests: [
      {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ calledParty: '100' }),
        setupRequest: (req) => ({ ...req, path: `/v1/sessions/rest-bench-${next++ % sessions}/consult` }),
      },
    ],
  }),
);

for (const ws of sockets) ws.terminate();
const out = {
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    node: process.version,
    date: new Date().toISOString(),
  },
  sessions,
  seconds,
  connections,
  rows,
};
process.stdout.write(
  `${rows.map((r) => `${r.name.padEnd(52)} ${String(r.reqPerSec).padStart(7)} req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  non-2xx ${r.non2xx}`).join('\n')}\n`,
);
if (values.json !== undefined) await writeFile(values.json, `${JSON.stringify(out, null, 2)}\n`);
process.exit(0);
