/**
 * Redis for tests: the one CI started (REDIS_URL), or a redis-server child of our own on a free
 * loopback port; undefined (and the tests skipped with the reason printed) only when there is no
 * redis-server binary at all.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { redisServerArgs, waitForRedis } from '../../src/state/redis-server.js';

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

/** Why Redis tests cannot run here, or undefined when they can. */
export function redisSkipReason(): string | undefined {
  if (process.env.REDIS_URL || redisServerBinary() !== undefined) return undefined;
  return 'no REDIS_URL and no redis-server binary (apt-get install redis-server): Redis tests skipped';
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
