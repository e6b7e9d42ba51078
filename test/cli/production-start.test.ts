/**
 * A production start never loads the provider emulator: `npm start` imports it on the development path
 * only (no PROVIDER_BASE_URL, or no MESSAGING_BASE_URL outside production). Checked on a real process
 * by recording every module it loads; the development start beside it shows the recording sees them.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const RECORDER = new URL('../helpers/record-modules.mjs', import.meta.url).href;

let rig: ProcessRig | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Starts `npm start`'s entry point with `env`, stops it, and answers the modules of src/ it loaded. */
async function modulesLoaded(env: Record<string, string>, lastLine: RegExp): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'vb-modules-'));
  dirs.push(dir);
  const file = join(dir, 'modules.txt');
  rig = await startRig({
    process: true,
    env: {
      ...env,
      // tsx first, so that the recorder's hook sees each module before tsx compiles it.
      NODE_OPTIONS: `--import tsx --import ${RECORDER}`,
      RECORD_MODULES_TO: file,
    },
  });
  const bridge = rig.process;
  // Started in full: the banner's last line is written once everything start-up loads is loaded.
  await waitFor(() => lastLine.test(bridge.output()), 10_000, 'the start-up banner');
  await bridge.kill('SIGTERM');
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((u) => u.includes('/src/'))
    .map((u) => u.slice(u.indexOf('/src/') + 1));
}

describe('npm start', () => {
  it('in production loads no module of src/emulator/', async () => {
    const mods = await modulesLoaded(
      {
        NODE_ENV: 'production',
        PROVIDER_BASE_URL: 'http://127.0.0.1:9/v1',
        MEDIA_SECRET: 'prod-media-secret',
        AUTH_JWT_SECRET: 'prod-auth-secret',
      },
      /^ {2}messaging: .*$/m,
    );
    expect(mods).toContain('src/cli/main.ts');
    expect(mods).toContain('src/app.ts');
    expect(mods.filter((m) => m.startsWith('src/emulator/'))).toEqual([]);
  });

  it('in development, without a provider, loads the emulator it runs in-process', async () => {
    const mods = await modulesLoaded({}, /^ {4}emulator at .*$/m);
    expect(mods).toContain('src/emulator/in-process.ts');
    expect(mods).toContain('src/emulator/server.ts');
  });
});
