/**
 * The command line of `npm run bench:capacity` (bench/capacity.ts), parsed and checked apart from the
 * run so it can be tested. Every error names the option and what it takes.
 */
import { parseArgs } from 'node:util';
import { type PinCpus, parsePinCpus } from '../src/load/pin.js';
import { parseTarget } from './capacity-lib.js';

export interface CapacityArgs {
  readonly ladder: number[];
  readonly seconds: number;
  readonly encodings: ('binary' | 'base64')[];
  readonly targets: string[];
  readonly procs: number;
  readonly lowCalls: number;
  readonly stopAfter: number;
  readonly pin: PinCpus | undefined;
  readonly cpuProfDir: string | undefined;
  readonly json: string | undefined;
}

function positiveInts(option: string, raw: string, min: number): number[] {
  const nums = raw.split(',').map((s) => (/^\s*\d+\s*$/.test(s) ? Number(s) : Number.NaN));
  if (nums.some((n) => !Number.isSafeInteger(n) || n < min))
    throw new Error(`--${option} takes whole numbers >= ${min}, comma-separated, got ${JSON.stringify(raw)}`);
  return nums;
}

function one(option: string, raw: string, min: number): number {
  const nums = positiveInts(option, raw, min);
  if (nums.length !== 1)
    throw new Error(`--${option} takes one whole number >= ${min}, got ${JSON.stringify(raw)}`);
  return nums[0]!;
}

export function parseCapacityArgs(args: string[], cpuCount: number): CapacityArgs {
  const { values } = parseArgs({
    args,
    options: {
      ladder: { type: 'string', default: '200,300,400,500,600,700,800' },
      seconds: { type: 'string', default: '20' },
      encodings: { type: 'string', default: 'binary,base64' },
      targets: { type: 'string', default: 'bridge,echo-delayed,echo' },
      procs: { type: 'string', default: '1' },
      'low-calls': { type: 'string', default: '20' },
      'stop-after': { type: 'string', default: '0' },
      pin: { type: 'boolean', default: false },
      'pin-cpus': { type: 'string' },
      'cpu-prof': { type: 'string' },
      json: { type: 'string' },
    },
  });
  const encodings = values.encodings.split(',');
  for (const e of encodings)
    if (e !== 'binary' && e !== 'base64')
      throw new Error(`--encodings takes binary and base64, got ${JSON.stringify(e)}`);
  const targets = values.targets.split(',');
  for (const t of targets) parseTarget(t);
  if (values['pin-cpus'] !== undefined && !values.pin)
    throw new Error('--pin-cpus sets the cores of --pin: give --pin too');
  if (values.pin && cpuCount < 2) throw new Error(`--pin needs two cores, this machine has ${cpuCount}`);
  return {
    ladder: positiveInts('ladder', values.ladder, 1),
    seconds: one('seconds', values.seconds, 1),
    encodings: encodings as ('binary' | 'base64')[],
    targets,
    procs: one('procs', values.procs, 1),
    lowCalls: one('low-calls', values['low-calls'], 1),
    stopAfter: one('stop-after', values['stop-after'], 0),
    pin: values.pin ? parsePinCpus(values['pin-cpus'] ?? '1,0', cpuCount) : undefined,
    cpuProfDir: values['cpu-prof'],
    json: values.json,
  };
}
