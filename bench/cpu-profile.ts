/**
 * Summarises `node --cpu-prof` profiles (`npm run bench:capacity -- --cpu-prof DIR` writes one per
 * thread of each bridge target): self time per function, and grouped into the bridge's own code, `ws`,
 * other dependencies, Node's internals and native calls, the garbage collector, V8's unattributed work
 * (`(program)`) and idle.
 *
 *   npm run bench:cpu-profile -- FILE_OR_DIR... [--top 25] [--skip-s 0] [--json]
 *
 * `--skip-s S` leaves out each profile's first S seconds (the start-up's module loading).
 *
 * Node names each file `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`: thread 0 is the main thread,
 * 1 and up are worker threads (the DSP workers).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export type Group = 'bridge' | 'ws' | 'deps' | 'node' | 'gc' | 'program' | 'idle';

export function groupOf(frame: CallFrame): Group | undefined {
  const { functionName: name, url } = frame;
  if (name === '(root)') return undefined;
  if (name === '(garbage collector)') return 'gc';
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'program';
  if (url.includes('/node_modules/ws/')) return 'ws';
  if (url.includes('/node_modules/')) return 'deps';
  if (url === '' || url.startsWith('node:')) return 'node';
  return 'bridge';
}

export interface Summary {
  file: string;
  /** Profiled wall time, ms. */
  wallMs: number;
  /** Self time by group, ms. */
  groups: Record<Group, number>;
  top: { group: Group; name: string; where: string; ms: number }[];
}

/** `skipMs`: leave out the profile's first ms (the process's start-up: module loading and compiling). */
export function summarise(file: string, profile: Profile, top: number, skipMs = 0): Summary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  // Each sample's time is the gap to the next one (the last sample gets none).
  let t = 0;
  for (let i = 0; i + 1 < profile.samples.length; i++) {
    t += profile.timeDeltas[i]! / 1000;
    if (t < skipMs) continue;
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + profile.timeDeltas[i + 1]! / 1000);
  }
  const groups: Record<Group, number> = { bridge: 0, ws: 0, deps: 0, node: 0, gc: 0, program: 0, idle: 0 };
  const fns = new Map<string, { group: Group; name: string; where: string; ms: number }>();
  for (const [id, ms] of self) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    const group = groupOf(frame);
    if (group === undefined) continue;
    groups[group] += ms;
    const path = frame.url.replace(/^file:\/\//, '');
    const rel = path.includes('/node_modules/')
      ? path.slice(path.lastIndexOf('/node_modules/') + 14)
      : path.replace(/^.*?\/(dist|src)\//, '$1/');
    const where = frame.url === '' ? '(native)' : `${rel}:${frame.lineNumber + 1}`;
    const key = `${frame.functionName}@${where}`;
    const entry = fns.get(key) ?? { group, name: frame.functionName || '(anonymous)', where, ms: 0 };
    entry.ms += ms;
    fns.set(key, entry);
  }
  const sorted = [...fns.values()].filter((e) => e.group !== 'idle').sort((a, b) => b.ms - a.ms);
  return {
    file: basename(file),
    wallMs: Math.max(0, (profile.endTime - profile.startTime) / 1000 - skipMs),
    groups,
    top: sorted.slice(0, top),
  };
}

function filesOf(paths: string[]): string[] {
  return paths.flatMap((p) =>
    statSync(p).isDirectory()
      ? readdirSync(p)
          .filter((f) => f.endsWith('.cpuprofile'))
          .map((f) => join(p, f))
      : [p],
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: 'string', default: '25' },
      'skip-s': { type: 'string', default: '0' },
      json: { type: 'boolean', default: false },
    },
  });
  const top = Number(values.top);
  const skip = Number(values['skip-s']);
  if (positionals.length === 0 || !Number.isInteger(top) || top < 1 || !(skip >= 0))
    throw new Error('usage: npm run bench:cpu-profile -- FILE_OR_DIR... [--top N] [--skip-s S] [--json]');
  const summaries = filesOf(positionals).map((f) =>
    summarise(f, JSON.parse(readFileSync(f, 'utf8')) as Profile, top, skip * 1000),
  );
  if (values.json) process.stdout.write(`${JSON.stringify(summaries, null, 2)}\n`);
  else
    for (const s of summaries) {
      const busy = Object.entries(s.groups)
        .filter(([g]) => g !== 'idle')
        .reduce((a, [, v]) => a + v, 0);
      const pct = (ms: number) => `${((100 * ms) / busy).toFixed(1)}%`;
      process.stdout.write(
        `\n${s.file}: ${(s.wallMs / 1000).toFixed(1)} s profiled, ${(busy / 1000).toFixed(2)} s busy\n` +
          `  groups (share of busy): ${Object.entries(s.groups)
            .filter(([g]) => g !== 'idle')
            .map(([g, v]) => `${g} ${pct(v)}`)
            .join(', ')}\n` +
          s.top
            .map((e) => `  ${pct(e.ms).padStart(6)}  ${e.group.padEnd(7)} ${e.name}  ${e.where}`)
            .join('\n') +
          '\n',
      );
    }
}
