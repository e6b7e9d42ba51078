/**
 * What the benches that take turns round by round on fresh bridges share (bench/dialects.ts,
 * bench/console-load.ts): calls, seconds, rounds, pinning (`--pin [--pin-cpus 1,0]`) and a JSON file,
 * checked with errors that name the option; the process is moved onto the load core when pinned.
 */
import { cpus } from 'node:os';
import { parsePinCpus, pinProcess } from '../src/load/pin.js';
import { type BenchContext, echoDelayFromEnv } from './capacity-lib.js';

export const ROUNDS_OPTIONS = {
  calls: { type: 'string', default: '200' },
  seconds: { type: 'string', default: '20' },
  rounds: { type: 'string', default: '2' },
  pin: { type: 'boolean', default: false },
  'pin-cpus': { type: 'string' },
  json: { type: 'string' },
} as const;

export function whole(option: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`--${option} takes a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

export interface Rounds {
  readonly calls: number;
  readonly seconds: number;
  readonly rounds: number;
  readonly json: string | undefined;
  readonly ctx: BenchContext;
}

export async function roundsFrom(values: {
  calls: string;
  seconds: string;
  rounds: string;
  pin: boolean;
  'pin-cpus'?: string | undefined;
  json?: string | undefined;
}): Promise<Rounds> {
  const calls = whole('calls', values.calls, 1, 5000);
  const seconds = whole('seconds', values.seconds, 1, 3600);
  const rounds = whole('rounds', values.rounds, 1, 20);
  if (values['pin-cpus'] !== undefined && !values.pin) throw new Error('--pin-cpus needs --pin');
  const pin = values.pin ? parsePinCpus(values['pin-cpus'] ?? '1,0', cpus().length) : undefined;
  const ctx: BenchContext = { pin, procs: 1, echoDelayMs: echoDelayFromEnv(process.env.ECHO_DELAY_MS) };
  if (pin !== undefined) await pinProcess(process.pid, pin.load);
  return { calls, seconds, rounds, json: values.json, ctx };
}
