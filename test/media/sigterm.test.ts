/**
 * `npm start`'s process end to end: the banner names the media URL, and SIGTERM drains live calls, closes
 * them with 1001 and exits 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { DEV_MEDIA_SECRET } from '../../src/config.js';
import { TestProvider } from '../helpers/provider.js';
import { waitFor } from '../helpers/wait.js';

let child: ChildProcess | undefined;
const providers: TestProvider[] = [];

afterEach(() => {
  for (const p of providers.splice(0)) p.close();
  if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
});

describe('SIGTERM', () => {
  it('prints the media URL at start, then on SIGTERM drains calls, closes them 1001 and exits 0', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts'], {
      env: {
        ...process.env,
        NODE_ENV: 'development',
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        DSP_WORKERS: '0',
        DRAIN_TIMEOUT_MS: '500',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    await waitFor(() => /ws:\/\/127\.0\.0\.1:\d+\/v1\/media/.test(out), 20_000, 'the start-up banner');
    expect(out).toContain('npm run token -- --media');
    const mediaUrl = /ws:\/\/127\.0\.0\.1:\d+\/v1\/media/.exec(out)![0];
    const p = new TestProvider(mediaUrl, {
      token: await mintToken({ secret: DEV_MEDIA_SECRET, ttlSeconds: 60 }),
    });
    providers.push(p);
    await p.start('sigterm-1');
    await new Promise((r) => setTimeout(r, 100));
    child.kill('SIGTERM');
    expect(await p.waitClosed(5_000)).toBe(1001);
    expect(await exited).toBe(0);
  });
});
