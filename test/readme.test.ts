/**
 * The README's first commands work for a newcomer on a fresh clone, each on its own: every command line
 * of "Two commands" installs before it runs (`npm ci && npm <script>`), one starts the bridge and one runs
 * the tests, and the tour starts the same way. `npm start` builds first (prestart), since dist/ is not in
 * the repository.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(`${ROOT}README.md`, 'utf8');
const PKG = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> };

/** The command lines (comments dropped) of the first sh block under the heading `## title`. */
function commands(title: string): string[] {
  const at = README.indexOf(`\n## ${title}\n`);
  expect(at, `README section "${title}"`).toBeGreaterThanOrEqual(0);
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(at));
  expect(block, `a sh block under "${title}"`).not.toBeNull();
  return block![1]!
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '');
}

describe('README', () => {
  it('"Two commands": one starts the bridge, one runs the tests, each installing first', () => {
    const lines = commands('Two commands');
    expect(lines).toEqual(['npm ci && npm start', 'npm ci && npm test']);
    for (const line of lines) {
      const script = /^npm ci && npm (?:run )?(\S+)$/.exec(line)?.[1];
      expect(script, line).toBeDefined();
      expect(PKG.scripts[script!], `package.json script "${script}"`).toBeDefined();
    }
  });

  it('the tour starts the bridge the same way', () => {
    expect(commands('A five-minute tour')[0]).toBe('npm ci && npm start');
  });

  it('npm start builds what it runs (dist/ is not in the repository)', () => {
    expect(PKG.scripts.prestart).toMatch(/\bnpm run build\b/);
    expect(PKG.scripts.start).toMatch(/\bdist\/cli\/main\.js\b/);
    expect(readFileSync(`${ROOT}.gitignore`, 'utf8').split('\n')).toContain('dist/');
  });
});
