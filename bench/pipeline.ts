/**
 * Per-chunk latency through the audio pipeline at real-time cadence. S simulated sessions, each sending
 * one 20 ms chunk each way every 20 ms (caller: 8 kHz slin, 320 bytes; bot: 16 kHz slin, 640 bytes),
 * their phases spread evenly over the 20 ms as live calls are. Latency is submit -> sink callback, per
 * chunk, both directions pooled. Inline, one worker and two workers; 100, 500 and 1000 sessions.
 *
 * Also reported, because latency alone would flatter a saturated inline pipeline (its callbacks are
 * synchronous, so submit -> sink is just the DSP time): `e2eP99Ms`, due -> sink, where due is when the
 * chunk would have arrived on schedule (so the main thread's backlog counts, in both modes alike);
 * `lagP99Ms`, how late the load generator got to submit against the schedule; the main thread's
 * utilisation, process CPU, and chunks lost or dropped.
 *
 * With `--rounds R` every cell runs R times and each figure is the median of the rounds; `p99RangeMs`
 * gives the lowest and highest p99 seen (this machine is shared and noisy: read the spread).
 *
 *   npm run bench:pipeline -- [--json] [--seconds 5] [--rounds 1] [--sessions 100,500,1000] [--modes inline,1,2]
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createResampler } from '../src/audio/resampler.js';
import { createPipeline, type DspPipeline } from '../src/pipeline/index.js';
import type { Leg, LegSink } from '../src/pipeline/types.js';

const argv = process.argv.slice(2);
function arg(name: string, fallback: string): string {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
}
const JSON_OUT = argv.includes('--json');
const SECONDS = Number(arg('seconds', '5'));
const ROUNDS = Math.max(1, Number(arg('rounds', '1')));
const WARMUP_S = 1;
const SESSIONS = arg('sessions', '100,500,1000').split(',').map(Number);
const MODES = arg('modes', 'inline,1,2')
  .split(',')
  .map((m) => (m === 'inline' ? 0 : Number(m)));
const TICK_MS = 20;
/** Timer wake-ups per tick: sessions are split into this many phase groups. */
const SLOTS = 20;

// Input audio: a tone, so the resampler does real work on real-looking samples.
const callerChunk = new Uint8Array(320);
const botChunk = new Uint8Array(640);
{
  const c = new Int16Array(callerChunk.buffer);
  for (let i = 0; i < c.length; i++) c[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  const b = new Int16Array(botChunk.buffer);
  for (let i = 0; i < b.length; i++) b[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16000));
}

/** Latencies of one run, preallocated; recording stops when full. */
class Recorder {
  /** submit -> sink */
  readonly lat: Float64Array;
  /** due (when the chunk would have arrived) -> sink: adds the main thread's own backlog */
  readonly e2e: Float64Array;
  n = 0;
  delivered = 0;
  recording = false;
  constructor(capacity: number) {
    this.lat = new Float64Array(capacity);
    this.e2e = new Float64Array(capacity);
  }
  add(now: number, sent: number, due: number): void {
    this.delivered++;
    if (this.recording && this.n < this.lat.length) {
      this.lat[this.n] = now - sent;
      this.e2e[this.n++] = now - due;
    }
  }
}

/** One per call: FIFOs of submit and due times per leg (per-leg order is guaranteed). */
class BenchSink {
  private readonly botT = new Float64Array(512);
  private readonly callerT = new Float64Array(512);
  private readonly botDue = new Float64Array(512);
  private readonly callerDue = new Float64Array(512);
  private botHead = 0;
  private botTail = 0;
  private callerHead = 0;
  private callerTail = 0;
  gaps = 0;
  constructor(private readonly rec: Recorder) {}
  sentToBot(t: number, due: number): void {
    this.botDue[this.botTail & 511] = due;
    this.botT[this.botTail++ & 511] = t;
  }
  sentToCaller(t: number, due: number): void {
    this.callerDue[this.callerTail & 511] = due;
    this.callerT[this.callerTail++ & 511] = t;
  }
  toBot(): void {
    const i = this.botHead++ & 511;
    this.rec.add(performance.now(), this.botT[i]!, this.botDue[i]!);
  }
  toCaller(): void {
    const i = this.callerHead++ & 511;
    this.rec.add(performance.now(), this.callerT[i]!, this.callerDue[i]!);
  }
  /** The caller -> bot leg's sink, and the bot -> caller leg's. */
  readonly up: LegSink = {
    audio: () => this.toBot(),
    marker: () => {},
    reset: () => {},
    gap: () => {
      this.gaps++;
    },
  };
  readonly down: LegSink = { ...this.up, audio: () => this.toCaller() };
}

interface Cell {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** due -> sink p99: what a chunk arriving on schedule waited in all, main-thread backlog included. */
  e2eP99Ms: number;
  lagP99Ms: number;
  mainThreadUtil: number;
  cpuCores: number;
  /** Chunks submitted (whole run, warm-up included) that never reached a sink. */
  lost: number;
  /** Of which dropped by a full worker staging buffer. */
  dropped: number;
}

function pct(sorted: Float64Array, p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

const r3 = (v: number) => Math.round(v * 1000) / 1000;

async function runCell(workers: number, sessions: number): Promise<Cell> {
  const pipeline: DspPipeline = createPipeline({ workers });
  const ticks = Math.round(((SECONDS + WARMUP_S) * 1000) / TICK_MS);
  const rec = new Recorder(sessions * 2 * Math.round((SECONDS * 1000) / TICK_MS) + 1024);
  const sinks: BenchSink[] = [];
  const live: { up: Leg; down: Leg }[] = [];
  const caller = { codec: 'slin', rate: 8000 } as const;
  const bot = { codec: 'slin', rate: 16000 } as const;
  for (let i = 0; i < sessions; i++) {
    const sink = new BenchSink(rec);
    sinks.push(sink);
    const up = pipeline.open({ from: caller, to: bot }, sink.up);
    live.push({ up, down: pipeline.open({ from: bot, to: caller }, sink.down, { near: up }) });
  }
  // Let the workers start (and compile) before the clock starts.
  await new Promise((r) => setTimeout(r, workers > 0 ? 1500 : 100));

  const lags = new Float64Array(ticks * SLOTS);
  let nLags = 0;
  const t0 = performance.now();
  let elu0 = performance.eventLoopUtilization();
  let cpu0 = process.cpuUsage();
  let measuredFrom = 0;
  const perSlot = Math.ceil(sessions / SLOTS);
  for (let k = 0; k < ticks * SLOTS; k++) {
    if (k === WARMUP_S * (1000 / TICK_MS) * SLOTS) {
      rec.recording = true;
      elu0 = performance.eventLoopUtilization();
      cpu0 = process.cpuUsage();
      measuredFrom = performance.now();
    }
    const due = t0 + (k * TICK_MS) / SLOTS;
    const wait = due - performance.now();
    if (wait > 0.5) await new Promise((r) => setTimeout(r, wait));
    const now = performance.now();
    if (rec.recording) lags[nLags++] = Math.max(0, now - due);
    const slot = k % SLOTS;
    const end = Math.min(sessions, (slot + 1) * perSlot);
    for (let i = slot * perSlot; i < end; i++) {
      const sink = sinks[i]!;
      const session = live[i]!;
      sink.sentToBot(performance.now(), due);
      session.up.push(callerChunk);
      sink.sentToCaller(performance.now(), due);
      session.down.push(botChunk);
    }
  }
  // Let the last chunks arrive.
  const deadline = performance.now() + 2000;
  const expected = sessions * 2 * ticks;
  while (rec.delivered < expected && performance.now() < deadline)
    await new Promise((r) => setTimeout(r, 10));
  const wall = performance.now() - measuredFrom;
  const elu = performance.eventLoopUtilization(elu0);
  const cpu = process.cpuUsage(cpu0);
  const stats = pipeline.stats();
  await pipeline.close();
  const lat = rec.lat.subarray(0, rec.n).sort();
  const e2e = rec.e2e.subarray(0, rec.n).sort();
  const lagSorted = lags.subarray(0, nLags).sort();
  return {
    p50Ms: r3(pct(lat, 0.5)),
    p99Ms: r3(pct(lat, 0.99)),
    maxMs: r3(lat.length === 0 ? Number.NaN : lat[lat.length - 1]!),
    e2eP99Ms: r3(pct(e2e, 0.99)),
    lagP99Ms: r3(pct(lagSorted, 0.99)),
    mainThreadUtil: r3(elu.utilization),
    cpuCores: r3((cpu.user + cpu.system) / 1000 / wall),
    lost: expected - rec.delivered,
    dropped: stats.dropped,
  };
}

/** Figure by figure, the median over rounds; plus the range of p99. */
function median(rounds: Cell[]): Cell & { p99RangeMs: [number, number] } {
  const mid = (key: keyof Cell) => {
    const v = rounds.map((c) => c[key]).sort((a, b) => a - b);
    return v[v.length >> 1]!;
  };
  const p99 = rounds.map((c) => c.p99Ms).sort((a, b) => a - b);
  return {
    p50Ms: mid('p50Ms'),
    p99Ms: mid('p99Ms'),
    maxMs: mid('maxMs'),
    e2eP99Ms: mid('e2eP99Ms'),
    lagP99Ms: mid('lagP99Ms'),
    mainThreadUtil: mid('mainThreadUtil'),
    cpuCores: mid('cpuCores'),
    lost: mid('lost'),
    dropped: mid('dropped'),
    p99RangeMs: [p99[0]!, p99[p99.length - 1]!],
  };
}

const modeName = (w: number) => (w === 0 ? 'inline' : `workers${w}`);
const results: Record<string, Record<string, ReturnType<typeof median>>> = {};
for (const workers of MODES) {
  const row: Record<string, ReturnType<typeof median>> = {};
  for (const sessions of SESSIONS) {
    const rounds: Cell[] = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await runCell(workers, sessions));
    row[String(sessions)] = median(rounds);
    if (!JSON_OUT) process.stderr.write(`${modeName(workers)} ${sessions} done\n`);
  }
  results[modeName(workers)] = row;
}

const probe = createResampler(8000, 16000);
const machine = {
  cpus: cpus().length,
  model: cpus()[0]?.model ?? 'unknown',
  node: process.version,
  resampler: probe.constructor.name,
};
probe.free();

if (JSON_OUT) {
  console.log(JSON.stringify({ machine, seconds: SECONDS, rounds: ROUNDS, chunkMs: TICK_MS, results }));
} else {
  console.log(
    `${machine.cpus} x ${machine.model}, Node ${machine.node}, resampler ${machine.resampler}; ${SECONDS} s per cell, median of ${ROUNDS}`,
  );
  console.log(
    'mode       sessions  p50 ms   p99 ms   (p99 range)      max ms   e2e p99  lag p99  main util  cpu cores     lost  dropped',
  );
  for (const [mode, row] of Object.entries(results)) {
    for (const [sessions, c] of Object.entries(row)) {
      console.log(
        `${mode.padEnd(10)} ${sessions.padStart(8)}  ${c.p50Ms.toFixed(3).padStart(6)}  ${c.p99Ms.toFixed(3).padStart(7)}  ${`(${c.p99RangeMs[0].toFixed(2)}-${c.p99RangeMs[1].toFixed(2)})`.padEnd(14)}  ${c.maxMs.toFixed(2).padStart(7)}  ${c.e2eP99Ms.toFixed(2).padStart(7)}  ${c.lagP99Ms.toFixed(2).padStart(7)}  ${c.mainThreadUtil.toFixed(2).padStart(9)}  ${c.cpuCores.toFixed(2).padStart(9)}  ${String(c.lost).padStart(7)}  ${String(c.dropped).padStart(7)}`,
      );
    }
  }
}
