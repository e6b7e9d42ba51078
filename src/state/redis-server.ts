/**
 * A loopback redis-server for local trials (`npm run cluster`) and tests: its arguments, and PING over a
 * raw socket to tell whether Redis is there without a client library.
 */
import { Socket } from 'node:net';

/** redis-server on 127.0.0.1:`port` without persistence. */
export function redisServerArgs(port: number): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
}

/** PING on 127.0.0.1:`port`: true on +PONG within `timeoutMs`. */
export function pingRedis(port: number, timeoutMs = 300): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('error', () => done(false));
    s.once('data', (d) => done(d.toString().startsWith('+PONG')));
    s.connect(port, '127.0.0.1', () => s.write('PING\r\n'));
  });
}

/** Pings until Redis answers: false after `timeoutMs`, or as soon as `gone()` says the server exited. */
export async function waitForRedis(port: number, timeoutMs = 10_000, gone = () => false): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pingRedis(port, 200))) {
    if (Date.now() > deadline || gone()) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}
