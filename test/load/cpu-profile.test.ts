/** bench:cpu-profile: self time of a real `node --cpu-prof` profile, grouped. */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { groupOf, summarise } from '../../bench/cpu-profile.js';

const run = promisify(execFile);

describe('bench:cpu-profile', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('groups frames by where their code lives', () => {
    const f = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });
    expect(groupOf(f('(garbage collector)', ''))).toBe('gc');
    expect(groupOf(f('(program)', ''))).toBe('program');
    expect(groupOf(f('(idle)', ''))).toBe('idle');
    expect(groupOf(f('(root)', ''))).toBeUndefined();
    expect(groupOf(f('sendFrame', 'file:///app/node_modules/ws/lib/sender.js'))).toBe('ws');
    expect(groupOf(f('write', 'file:///app/node_modules/pino/lib/proto.js'))).toBe('deps');
    expect(groupOf(f('writev', ''))).toBe('node');
    expect(groupOf(f('onStreamRead', 'node:internal/stream_base_commons'))).toBe('node');
    expect(groupOf(f('push', 'file:///app/dist/media/session.js'))).toBe('bridge');
  });

  it("puts a script's busiest function first, with its file and line", async () => {
    dir = await mkdtemp(join(tmpdir(), 'cpu-prof-'));
    const script = join(dir, 'busy.mjs');
    await writeFile(
      script,
      [
        'function spinHere(ms) {',
        '  const end = Date.now() + ms; let x = 0;',
        '  while (Date.now() < end) x += Math.sqrt(x + 1);',
        '  return x;',
        '}',
        'spinHere(400);',
        '',
      ].join('\n'),
    );
    await run(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, script]);
    const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'))!;
    const s = summarise(file, JSON.parse(await readFile(join(dir, file), 'utf8')), 5);
    expect(s.top[0]).toMatchObject({ group: 'bridge', name: 'spinHere' });
    expect(s.top[0]!.where).toMatch(/busy\.mjs:1$/);
    // Most of the 400 ms of spinning lands in that function (the profile's sampling is ~1 ms).
    expect(s.top[0]!.ms).toBeGreaterThan(200);
    expect(s.groups.bridge).toBeGreaterThanOrEqual(s.top[0]!.ms);
  });
});
