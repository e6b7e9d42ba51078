/**
 * `npm start`'s process end to end: the banner names the media URL, and SIGTERM drains live calls, closes
 * them with 1001 and exits 0.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

let rig: ProcessRig | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await rig?.process.kill('SIGKILL');
  await rig?.close();
  rig = undefined;
});

describe('SIGTERM', () => {
  it('prints the media URL at start, then on SIGTERM drains calls, closes them 1001 and exits 0', async () => {
    rig = await startRig({
      process: true,
      env: { NODE_ENV: 'development', LOG_LEVEL: 'silent', DSP_WORKERS: '0', DRAIN_TIMEOUT_MS: '500' },
    });
    const { child } = rig.process;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const out = () => rig!.process.output();
    await waitFor(() => /ws:\/\/127\.0\.0\.1:\d+\/v1\/media/.test(out()), 20_000, 'the start-up banner');
    await waitFor(
      () => out().includes('npm run token -- --media'),
      5_000,
      'the banner to name the token command',
    );
    const mediaUrl = /ws:\/\/127\.0\.0\.1:\d+\/v1\/media/.exec(out())![0];
    const p = new TestProvider(mediaUrl, { token: await rig.mediaToken({ ttlSeconds: 60 }) });
    providers.push(p);
    await p.start('sigterm-1');
    // The call is live (listed) before the signal.
    const auth = { authorization: `Bearer ${await rig.restToken(['sessions:read'])}` };
    await waitFor(
      async () =>
        (await (await fetch(`${rig!.http}/v1/sessions`, { headers: auth })).text()).includes('sigterm-1'),
      5_000,
      'the call to be listed',
    );
    child.kill('SIGTERM');
    expect(await p.waitClosed(5_000)).toBe(1001);
    expect(await exited).toBe(0);
  });
});
