/**
 * The dialects from the command line and the emulator's REST API: `npm run call -- --dialect D` and
 * `POST /emulator/calls` with `dialect` place a call as that platform and report what the caller heard.
 */
import { execFile } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import { call, EMULATOR_SECRET } from '../control/harness.js';
import { waitFor } from '../helpers/wait.js';
import { conforming, type FakeBridge, startFake } from './dialect-fakes.js';

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fake(dialect: Parameters<typeof startFake>[0], rate: number): Promise<FakeBridge> {
  const f = await startFake(dialect, rate, conforming(440, 1, rate));
  cleanups.push(f.close);
  return f;
}

describe('npm run call -- --dialect', () => {
  it('calls as Vonage and reports the tone it heard, and refuses a rate the platform does not offer', async () => {
    const f = await fake('vonage', 16000);
    const r = await run([
      'src/cli/call.ts',
      '--dialect',
      'vonage',
      '--url',
      f.url,
      '--rate',
      '16000',
      '--audio',
      'tone:440',
      '--seconds',
      '1.5',
      '--header',
      'x-bridge-token:abc',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ dialect: 'vonage', state: 'ended', breaches: [] });
    expect(report.toneSnrDb).toBeGreaterThan(30);
    expect(f.peers[0]!.req!.headers['x-bridge-token']).toBe('abc');

    const bad = await run(['src/cli/call.ts', '--dialect', 'vonage', '--url', f.url, '--rate', '11025']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--rate must be for vonage, one of 16000, 8000, 24000, got 11025/);
    const unknown = await run(['src/cli/call.ts', '--dialect', 'skype']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--dialect must be one of default, twilio/);
  });
});

describe('POST /emulator/calls with dialect', () => {
  it('places an Asterisk call into the given URL and reports heard tone, marks and breaches', async () => {
    const f = await fake('asterisk', 8000);
    const emu: Emulator = await createEmulator({ jwtSecret: EMULATOR_SECRET, log: createLogger('silent') });
    cleanups.push(() => emu.close());
    const url = await emu.listen(0);
    const token = await mintToken({ secret: EMULATOR_SECRET, scopes: ['media:manage'] });
    const bad = await call(url, 'POST', '/emulator/calls', {
      token,
      body: { dialect: 'asterisk', url: f.url, rate: 44100 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/rate must be for asterisk, one of 8000, 16000/);
    const badAuth = await call(url, 'POST', '/emulator/calls', {
      token,
      body: { dialect: 'asterisk', url: f.url, auth: { pin: '1' } },
    });
    expect(badAuth.status).toBe(400);
    expect(badAuth.body.message).toMatch(/auth\.pin/);

    const placed = await call(url, 'POST', '/emulator/calls', {
      token,
      body: {
        dialect: 'asterisk',
        url: f.url,
        audio: 'tone:440',
        seconds: 1.5,
        dtmf: '5@100',
        auth: { username: 'asterisk', password: 'pbx' },
      },
    });
    expect(placed.status).toBe(201);
    const id = placed.body.session_id as string;
    let view: Record<string, unknown> = {};
    await waitFor(
      async () => {
        view = (await call(url, 'GET', `/emulator/calls/${id}`, { token })).body;
        return view.state === 'ended' || view.state === 'failed';
      },
      8_000,
      'the emulated call to end',
    );
    expect(view).toMatchObject({
      dialect: 'asterisk',
      state: 'ended',
      breaches: [],
      marks: ['reply-done'],
      dtmf_sent: 1,
    });
    // The fake answers with 1 s of the same 440 Hz: the SNR is of what the caller heard.
    expect(view.tone_snr_db as number).toBeGreaterThan(30);
    expect(f.peers[0]!.control).toContain('DTMF_END digit:5');
    expect(f.peers[0]!.req!.headers.authorization).toBe(
      `Basic ${Buffer.from('asterisk:pbx').toString('base64')}`,
    );
  });
});
