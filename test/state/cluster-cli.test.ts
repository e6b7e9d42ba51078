/**
 * `npm run cluster`: Redis and N instances on consecutive ports, all stopped on a signal.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pingRedis } from '../../src/state/redis-server.js';
import { freePort, redisBinarySkipReason } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const skip = redisBinarySkipReason('state/cluster-cli.test.ts');

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function twoFreePorts(): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const p = await freePort();
    if (p < 65535 && (await portFree(p + 1))) return p;
  }
  throw new Error('no two consecutive free ports');
}

async function ok(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}

describe.skipIf(skip !== undefined)('npm run cluster', () => {
  it('starts Redis and 2 instances on consecutive ports sharing it, and stops them all on SIGINT', async () => {
    const port = await twoFreePorts();
    const redisPort = await freePort();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/cluster.ts',
        '--instances',
        '2',
        '--port',
        String(port),
        '--redis-port',
        String(redisPort),
      ],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn', DSP_WORKERS: '0' }, stdio: 'pipe' },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      for (const p of [port, port + 1]) {
        await waitFor(() => ok(`http://127.0.0.1:${p}/readyz`), 20_000, `instance on ${p}\n${out}`, 100);
        const metrics = await (await fetch(`http://127.0.0.1:${p}/metrics`)).text();
        expect(metrics).toMatch(/^voicebridge_store_up 1$/m);
      }
      expect(await pingRedis(redisPort, 500)).toBe(true);
      expect(out).toContain(`started redis-server on 127.0.0.1:${redisPort}`);
      expect(out).toMatch(new RegExp(`\\[1:${port + 1}\\] voicebridge listening`));

      child.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(await pingRedis(redisPort, 500)).toBe(false);
      expect(await ok(`http://127.0.0.1:${port}/healthz`)).toBe(false);
      expect(await ok(`http://127.0.0.1:${port + 1}/healthz`)).toBe(false);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
