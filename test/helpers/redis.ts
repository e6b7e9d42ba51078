/**
 * Redis for tests: the one CI started (REDIS_URL), or a redis-server child of our own on a free
 * loopback port. Only where there is neither are the Redis tests skipped, with the reason printed; in CI
 * they fail instead (needs.ts).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { redisServerArgs, waitForRedis } from '../../src/state/redis-server.js';
import { skipUnlessCI } from './needs.js';

export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** True when this process started it (so it may stop and restart it). */
  readonly own: boolean;
  /** Stops a redis-server of our own (SIGKILL: no goodbye to clients); resolves once it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: no persistence). */
  restart(): Promise<void>;
}

export function redisServerBinary(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why `file`'s Redis tests cannot run here (no REDIS_URL and no redis-server), or undefined when they
 * can; in CI a missing Redis throws, failing the file.
 */
export function redisSkipReason(file: string): string | undefined {
  if (process.env.REDIS_URL || redisServerBinary() !== undefined) return undefined;
  return skipUnlessCI(
    file,
    'no REDIS_URL and no redis-server binary (scripts/install-test-deps.sh installs it)',
  );
}

/** As redisSkipReason, for tests that start and stop a redis-server of their own: the binary itself. */
export function redisBinarySkipReason(file: string): string | undefined {
  if (redisServerBinary() !== undefined) return undefined;
  return skipUnlessCI(file, 'no redis-server binary (scripts/install-test-deps.sh installs it)');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Redis for a test: CI's when `own` is not required and REDIS_URL is set, else a child of our own. */
export async function useRedis(o: { own?: boolean } = {}): Promise<TestRedis> {
  const shared = process.env.REDIS_URL;
  if (shared && o.own !== true) {
    const port = Number(new URL(shared).port || 6379);
    return {
      url: shared,
      port,
      own: false,
      stop: async () => {},
      restart: async () => {},
    };
  }
  const bin = redisServerBinary();
  if (bin === undefined) throw new Error('redis-server is not installed');
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(bin, redisServerArgs(port), { stdio: 'ignore' });
    if (!(await waitForRedis(port))) throw new Error(`redis-server did not answer on port ${port}`);
  };
  const stop = async () => {
    const c = child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    own: true,
    stop,
    async restart() {
      await stop();
      await start();
    },
  };
}
