import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';

const root = new URL('../', import.meta.url);

describe('the V8 flags the bridge runs with', () => {
  it('are the same in npm start, the Dockerfile and src/cli/node-flags.ts', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe(['node', ...BRIDGE_NODE_FLAGS, 'dist/cli/main.js'].join(' '));
    const cmd = readFileSync(new URL('Dockerfile', root), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('CMD '))
      .at(-1);
    expect(cmd).toBe(
      `CMD ${JSON.stringify(['node', ...BRIDGE_NODE_FLAGS, 'dist/cli/main.js']).replaceAll(',', ', ')}`,
    );
  });

  it('are flags this Node accepts', async () => {
    const { execFileSync } = await import('node:child_process');
    const out = execFileSync(process.execPath, [...BRIDGE_NODE_FLAGS, '-p', '1+1'], { encoding: 'utf8' });
    expect(out.trim()).toBe('2');
  });
});
