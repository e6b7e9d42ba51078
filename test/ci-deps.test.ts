/**
 * CI cannot pass by skipping: with redis-server or chromium missing and apt-get unable to install it,
 * scripts/install-test-deps.sh and .ci/run fail when CI is set and go on without it, and
 * test/helpers/needs.ts fails a test file in CI where it skips one elsewhere. Run on a PATH of its own
 * (every command of this machine but redis-server, apt-get a stub that fails, npm a stub that stops
 * .ci/run before it installs or tests anything).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { inCI, skipUnlessCI } from './helpers/needs.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const bin = mkdtempSync(join(tmpdir(), 'vb-ci-path-'));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

const STUBS: Record<string, string> = {
  'apt-get': 'echo "apt-get: no package source here" >&2; exit 100',
  sudo: 'exec "$@"',
  // .ci/run asks for npm's version first; anything further would install and run the tests.
  npm: '[ "$1" = --version ] && { echo 0.0.0; exit 0; }; echo "npm $* reached" >&2; exit 97',
};
for (const [name, body] of Object.entries(STUBS)) {
  writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(bin, name), 0o755);
}
for (const dir of (process.env.PATH ?? '').split(delimiter)) {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    continue;
  }
  for (const name of names) {
    if (name === 'redis-server') continue;
    try {
      symlinkSync(join(dir, name), join(bin, name));
    } catch {
      // Taken already: the first on PATH wins, as in a shell.
    }
  }
}

function run(cmd: string, env: Record<string, string | undefined>) {
  // Chromium present (any executable will do) unless the case says otherwise.
  const e: NodeJS.ProcessEnv = { ...process.env, PATH: bin, CHROMIUM_PATH: process.execPath };
  delete e.CI;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete e[k];
    else e[k] = v;
  }
  const r = spawnSync(join(ROOT, cmd), [], { cwd: ROOT, env: e, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('a test dependency that cannot be installed', () => {
  it('fails scripts/install-test-deps.sh under CI=true, and is reported and passed over without CI', () => {
    const ci = run('scripts/install-test-deps.sh', { CI: 'true' });
    expect(ci.out).toMatch(/still missing: redis-server: CI must run their tests/);
    expect(ci.status).toBe(1);
    const local = run('scripts/install-test-deps.sh', { CI: undefined });
    expect(local.out).toMatch(/still missing: redis-server: their tests will be skipped/);
    expect(local.status).toBe(0);
    const chromium = run('scripts/install-test-deps.sh', { CI: 'true', CHROMIUM_PATH: '/nonexistent' });
    expect(chromium.out).toMatch(/still missing: redis-server chromium \(none at \/nonexistent\)/);
    expect(chromium.status).toBe(1);
  });

  it('stops .ci/run (which sets CI) before it installs or tests anything', () => {
    const r = run('.ci/run', { CI: undefined });
    expect(r.out).toMatch(/CI must run their tests/);
    expect(r.out).not.toMatch(/npm .* reached/);
    expect(r.status).toBe(1);
  });

  it('fails a test file in CI, and skips it with the reason elsewhere', () => {
    const saved = process.env.CI;
    try {
      for (const ci of ['true', '1', 'yes']) {
        process.env.CI = ci;
        expect(inCI()).toBe(true);
        expect(() => skipUnlessCI('x.test.ts', 'no redis-server')).toThrow(
          'x.test.ts: no redis-server; CI must run these tests',
        );
        expect(skipUnlessCI('x.test.ts', undefined)).toBeUndefined();
      }
      for (const ci of [undefined, '', '0', 'false', 'FALSE']) {
        if (ci === undefined) delete process.env.CI;
        else process.env.CI = ci;
        expect(inCI()).toBe(false);
        expect(skipUnlessCI('x.test.ts', 'no redis-server')).toBe('no redis-server');
      }
    } finally {
      if (saved === undefined) delete process.env.CI;
      else process.env.CI = saved;
    }
  });
});
