#!/usr/bin/env node
/**
 * `npm run cluster -- --instances N`: local trials of scale-out. Starts Redis on loopback (unless one
 * already answers on the port) and N bridge instances on consecutive ports sharing it; Ctrl-C stops them
 * all, and Redis too when this started it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pingRedis, redisServerArgs, waitForRedis } from '../state/redis-server.js';
import { BRIDGE_NODE_FLAGS } from './node-flags.js';

const USAGE = `usage: npm run cluster -- [--instances 2] [--port 8080] [--host 127.0.0.1] [--redis-port 6379]
  --instances   bridge instances to start (1 to 16), on ports --port, --port + 1, ...
  --redis-port  Redis on 127.0.0.1; started as a child (no persistence) when none answers there
Every other setting comes from the environment, as for npm start (STATE_STORE is set for you).
`;

function fail(message: string): never {
  process.stderr.write(`cluster: ${message}\n${USAGE}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    instances: { type: 'string', default: '2' },
    port: { type: 'string', default: '8080' },
    host: { type: 'string', default: '127.0.0.1' },
    'redis-port': { type: 'string', default: '6379' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const instances = Number(values.instances);
const basePort = Number(values.port);
const redisPort = Number(values['redis-port']);
if (!Number.isInteger(instances) || instances < 1 || instances > 16)
  fail(`--instances must be 1 to 16, got ${values.instances}`);
if (!Number.isInteger(basePort) || basePort < 1 || basePort + instances - 1 > 65535)
  fail(`--port must leave room for ${instances} consecutive ports, got ${values.port}`);
if (!Number.isInteger(redisPort) || redisPort < 1 || redisPort > 65535)
  fail(`--redis-port must be 1 to 65535, got ${values['redis-port']}`);

/** Prefixes each line a child prints, so N instances' logs stay readable together. */
function relay(child: ChildProcess, tag: string): void {
  for (const [stream, out] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    let rest = '';
    stream?.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) out.write(`${tag} ${line}\n`);
    });
  }
}

const children: { child: ChildProcess; tag: string }[] = [];
let redis: ChildProcess | undefined;
let stopping = false;

if (await pingRedis(redisPort)) {
  process.stdout.write(`cluster: using the Redis already on 127.0.0.1:${redisPort}\n`);
} else {
  redis = spawn('redis-server', redisServerArgs(redisPort), { stdio: ['ignore', 'pipe', 'pipe'] });
  redis.once('error', (err) =>
    fail(`cannot start redis-server (${err.message}): install it (apt-get install redis-server)`),
  );
  relay(redis, '[redis]');
  const child = redis;
  if (!(await waitForRedis(redisPort, 10_000, () => child.exitCode !== null)))
    fail(`redis-server did not answer on port ${redisPort}`);
  process.stdout.write(`cluster: started redis-server on 127.0.0.1:${redisPort} (no persistence)\n`);
}

// From source under tsx (npm run cluster), or built under dist/.
const fromSource = import.meta.url.endsWith('.ts');
const main = fileURLToPath(new URL(fromSource ? './main.ts' : './main.js', import.meta.url));
for (let i = 0; i < instances; i++) {
  const port = basePort + i;
  const child = spawn(
    process.execPath,
    [...BRIDGE_NODE_FLAGS, ...(fromSource ? ['--import', 'tsx'] : []), main],
    {
      env: {
        ...process.env,
        PORT: String(port),
        HOST: values.host,
        STATE_STORE: `redis://127.0.0.1:${redisPort}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const tag = `[${i}:${port}]`;
  relay(child, tag);
  child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`cluster: instance ${tag} exited (${signal ?? code})\n`);
  });
  children.push({ child, tag });
}

async function stop(): Promise<void> {
  if (stopping) {
    // A second Ctrl-C: do not wait for calls to drain.
    for (const { child } of children) child.kill('SIGKILL');
    return;
  }
  stopping = true;
  process.stdout.write('cluster: stopping (Ctrl-C again to kill at once)\n');
  await Promise.all(children.map(({ child }) => exited(child, 'SIGTERM')));
  if (redis !== undefined) await exited(redis, 'SIGTERM');
  process.exit(0);
}

function exited(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
