import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { call } from '../control/harness.js';
import { useEmulatorCli } from '../helpers/emulator-cli.js';

const start = useEmulatorCli();

/** Starts `npm run emulator`'s entry point and resolves with the URL it prints. */
const startEmulator = (args: string[]) => start(args, (out) => /listening on (http:\/\/\S+)/.exec(out)?.[1]);

describe('npm run emulator', () => {
  it('serves the voice API with the given secret and dial plan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vb-plan-'));
    const plan = join(dir, 'plan.json');
    writeFileSync(plan, JSON.stringify({ '15550111': { dialStatus: 'CONGESTION', afterMs: 20 } }));
    const url = await startEmulator([
      '--port',
      '0',
      '--jwt-secret',
      'cli-secret',
      '--dial-plan',
      plan,
      '--accept-any-session',
      '--log-level',
      'silent',
    ]);
    expect((await call(url, 'GET', '/healthz')).status).toBe(200);
    const token = await mintToken({ secret: 'cli-secret' });
    const r = await call(url, 'POST', '/v1/sessions/any-1/consult', {
      token,
      body: { calledParty: '15550111' },
    });
    expect(r.body).toEqual({
      sessionId: 'any-1',
      consultId: 'consult-any-1',
      status: 'failed',
      dialStatus: 'CONGESTION',
      cause: 34,
      causeText: 'No circuit/channel available',
    });
    const wrong = await mintToken({ secret: 'other' });
    expect((await call(url, 'GET', '/v1/sessions', { token: wrong })).status).toBe(401);
  });

  it('refuses a bad dial plan with a line per bad entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vb-plan-'));
    const plan = join(dir, 'plan.json');
    writeFileSync(plan, JSON.stringify({ '1': { dialStatus: 'RINGING' } }));
    await expect(startEmulator(['--port', '0', '--dial-plan', plan])).rejects.toThrow(
      /exited with 2[\s\S]*1: dialStatus must be one of/,
    );
  });
});
