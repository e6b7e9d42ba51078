import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { Bridge } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { startInProcessProvider } from '../../src/emulator/in-process.js';
import { createLogger } from '../../src/log.js';
import { type InProcessRig, startRig as startTestRig } from '../helpers/rig.js';
import { call, holdSession, MEDIA_SECRET, restToken, startRig } from './harness.js';

const TSX = ['--import', 'tsx'];

function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...TSX, ...args],
      { env: { ...process.env, ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('start-up without a provider', () => {
  it('production refuses to start, naming PROVIDER_BASE_URL in one line', async () => {
    const r = await run(['src/cli/main.ts'], {
      NODE_ENV: 'production',
      MEDIA_SECRET: 'prod-media-secret',
      AUTH_JWT_SECRET: 'prod-auth-secret',
      PROVIDER_BASE_URL: '',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^PROVIDER_BASE_URL must be set when NODE_ENV=production/m);
  });

  it('development runs the emulator in-process and consults the calls the bridge holds', async () => {
    const log = createLogger('silent');
    const base = Object.freeze({
      ...loadConfig({ LOG_LEVEL: 'silent', DSP_WORKERS: '0' }),
      port: 0,
      host: '127.0.0.1',
    });
    let bridge: Bridge | undefined;
    let rig: InProcessRig | undefined;
    const inProcess = await startInProcessProvider(base, log, async (t, id) =>
      bridge?.ctx.sessions.get(t, id),
    );
    try {
      expect(inProcess.config.providerBaseUrl).toBe(`${inProcess.url}/v1`);
      // The development start's config, as `npm start` would run with it.
      rig = await startTestRig({ config: inProcess.config, log });
      bridge = rig.bridge;
      const http = rig.http;
      await holdSession(bridge, 'dev-call');
      const token = await restToken(['calls:control'], undefined, base.authJwtSecret!);
      const r = await call(http, 'POST', '/v1/sessions/dev-call/consult', {
        token,
        body: { calledParty: '15550111' },
      });
      expect(r.body).toMatchObject({ sessionId: 'dev-call', status: 'answered' });
    } finally {
      await rig?.close();
      await inProcess.emulator.close();
    }
  });
});

describe('npm run call', () => {
  it('places one call into the bridge and reports what came back', async () => {
    const rig = await startRig({ providerUrl: null });
    try {
      const url = `${rig.http.replace('http', 'ws')}/v1/media`;
      const r = await run(
        [
          'src/cli/call.ts',
          '--url',
          url,
          '--secret',
          MEDIA_SECRET,
          '--audio',
          'tone:440',
          '--seconds',
          '2',
          '--encoding',
          'base64',
          '--json',
        ],
        {},
      );
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout);
      expect(report.state).toBe('ended');
      expect(report.secondsSent).toBe(2);
      expect(report.secondsReceived).toBeGreaterThan(1.5);
      expect(report.toneSnrDb).toBeGreaterThan(60);
      expect(report.interArrivalMs.count).toBeGreaterThan(50);
      const bad = await run(['src/cli/call.ts', '--url', url, '--secret', 'wrong-secret', '--seconds', '1']);
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/http_401/);
    } finally {
      await rig.close();
    }
  });
});
