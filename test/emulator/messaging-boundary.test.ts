/**
 * The messaging emulator checks requests from its own tables (src/emulator/messaging/documents.ts, documents-rcs.ts),
 * written from the provider's documents, so that the bridge's client (src/messaging/) and the emulator
 * check each other. This test fails when any module the emulator's messaging code loads, directly or
 * through other modules, is in src/messaging/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const EMULATOR = join(ROOT, 'src/emulator/messaging');
const CLIENT = join(ROOT, 'src/messaging');

/** The relative modules a file names in `import`/`export ... from` and `import()`, as .ts paths. */
function importsOf(file: string): string[] {
  const src = readFileSync(file, 'utf8');
  const specs = [
    ...src.matchAll(/\b(?:import|export)\s[^;]*?\sfrom\s+['"]([^'"]+)['"]/g),
    ...src.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
    ...src.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
  ].map((m) => m[1]!);
  return specs.filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

/** Every module reachable from `start`, each with the chain that reaches it. */
function reachable(start: string[]): Map<string, string[]> {
  const seen = new Map<string, string[]>(start.map((f) => [f, [f]]));
  const queue = [...start];
  while (queue.length > 0) {
    const f = queue.shift()!;
    for (const next of importsOf(f)) {
      if (seen.has(next)) continue;
      seen.set(next, [...seen.get(f)!, next]);
      queue.push(next);
    }
  }
  return seen;
}

describe('the messaging emulator and the client check each other', () => {
  it('no module of src/emulator/messaging loads anything in src/messaging, directly or indirectly', () => {
    const files = readdirSync(EMULATOR)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(EMULATOR, f));
    expect(files.length).toBeGreaterThan(5);
    const crossing = [...reachable(files).values()]
      .filter((chain) => chain.at(-1)!.startsWith(`${CLIENT}/`))
      .map((chain) => chain.map((f) => relative(ROOT, f)).join(' -> '));
    expect(crossing).toEqual([]);
  });

  it('the import reader finds a crossing where there is one (the bridge routes load the client)', () => {
    const chains = reachable([join(CLIENT, 'routes.ts')]);
    expect(
      [...chains.keys()].some((f) => f === join(CLIENT, 'client.ts') || f === join(CLIENT, 'types.ts')),
    ).toBe(true);
  });
});
