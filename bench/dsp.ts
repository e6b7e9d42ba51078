/**
 * DSP benchmark: our resampler (WebAssembly SIMD and pure JS) against the anchors a user could pick
 * instead, all measured by the same code on the same signals, streaming 20 ms PCM16 chunks.
 *
 *   npm run bench:dsp                 readable table
 *   npm run bench:dsp -- --json       one JSON object
 *   npm run bench:dsp -- --rounds 7   more rounds (default 5)
 *
 * Speed: x realtime = seconds of audio per CPU second (process.cpuUsage, user + system, one thread),
 * median of the rounds; spread = (max - min) / median of those rounds, in percent. Quality: aliasDb is
 * how far aliases (down) or images (up) of test tones sit below the tone, passbandSnrDb the worst SNR
 * of 300 Hz, 1 kHz, 3 kHz and 3.4 kHz tones where a gain error counts as noise (test/helpers/signal.ts).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { createResampler } from '../src/audio/resampler.js';
import { levelBelowDb, toneSnrDb } from '../test/helpers/signal.js';

const CONVERSIONS = [
  [8000, 16000],
  [16000, 8000],
  [24000, 16000],
  [22050, 8000],
] as const;
const PASSBAND_TONES = [300, 1000, 3000, 3400];
const AMPLITUDE = 29_000;
/** Shown aliases are capped here: beyond it the alias is below PCM16 rounding (the output is zero). */
const FLOOR_DB = 120;
/** CPU time each speed measurement aims for; long enough that scheduler noise is a small part. */
const TARGET_CPU_S = 0.3;

/** One streaming resampler, PCM16 in and out, whatever is behind it. */
interface Stream {
  process(input: Int16Array, output: Int16Array): number;
  free(): void;
}
type Factory = (inRate: number, outRate: number) => Promise<Stream>;

interface SpeexModule {
  HEAP16: Int16Array;
  HEAPU32: Uint32Array;
  _malloc(bytes: number): number;
  _speex_resampler_init(ch: number, inRate: number, outRate: number, quality: number, err: number): number;
  _speex_resampler_process_int(
    st: number,
    ch: number,
    inp: number,
    inLen: number,
    out: number,
    outLen: number,
  ): number;
  _speex_resampler_destroy(st: number): void;
}

const MAX_IN = 4096;

/** @echogarden/speex-resampler-wasm: one module per build, one resampler state per stream. */
function speex(entry: string, quality: number): Factory {
  let mod: Promise<SpeexModule> | undefined;
  return async (inRate, outRate) => {
    mod ??= import(entry).then((m: { default: () => Promise<SpeexModule> }) => m.default());
    const m = await mod;
    const err = m._malloc(4);
    const st = m._speex_resampler_init(1, inRate, outRate, quality, err);
    const maxOut = Math.ceil((MAX_IN * outRate) / inRate) + 16;
    const inPtr = m._malloc(MAX_IN * 2);
    const outPtr = m._malloc(maxOut * 2);
    const inLen = m._malloc(4);
    const outLen = m._malloc(4);
    // Views cached by length, as ours does, so neither side pays for allocation in the loop.
    let heap = m.HEAP16;
    let views: Int16Array[] = [];
    return {
      process(input, output) {
        if (m.HEAP16 !== heap) {
          heap = m.HEAP16;
          views = [];
        }
        heap.set(input, inPtr >> 1);
        m.HEAPU32[inLen >> 2] = input.length;
        m.HEAPU32[outLen >> 2] = maxOut;
        m._speex_resampler_process_int(st, 0, inPtr, inLen, outPtr, outLen);
        const n = m.HEAPU32[outLen >> 2]!;
        let v = views[n];
        if (v === undefined) {
          v = heap.subarray(outPtr >> 1, (outPtr >> 1) + n);
          views[n] = v;
        }
        output.set(v);
        return n;
      },
      free() {
        m._speex_resampler_destroy(st);
      },
    };
  };
}

interface Src {
  full(
    dataIn: Float32Array,
    dataOut?: Float32Array | null,
    outLength?: { frames: number } | null,
  ): Float32Array;
  destroy(): void;
}

/** @alexanderolsen/libsamplerate-js SINC_MEDIUM_QUALITY; float [-1, 1) in and out, so we convert. */
const libsamplerateMedium: Factory = async (inRate, outRate) => {
  type CreateFn = (ch: number, i: number, o: number, opt: { converterType: number }) => Promise<Src>;
  // A UMD bundle: Node's ESM loader exposes it as the default export.
  const lib = (await import('@alexanderolsen/libsamplerate-js')) as unknown as {
    default?: { create: CreateFn };
    create?: CreateFn;
  };
  const create = lib.default?.create ?? lib.create;
  if (create === undefined) throw new Error('libsamplerate-js: no create()');
  const SRC_SINC_MEDIUM_QUALITY = 1;
  const src = await create(1, inRate, outRate, { converterType: SRC_SINC_MEDIUM_QUALITY });
  const ins: Float32Array[] = [];
  const out = new Float32Array(Math.ceil((MAX_IN * outRate) / inRate) + 16);
  const len = { frames: 0 };
  return {
    process(input, output) {
      let fin = ins[input.length];
      if (fin === undefined) {
        fin = new Float32Array(input.length);
        ins[input.length] = fin;
      }
      for (let i = 0; i < input.length; i++) fin[i] = input[i]! / 32768;
      src.full(fin, out, len);
      for (let i = 0; i < len.frames; i++) {
        const v = Math.round(out[i]! * 32768);
        output[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      }
      return len.frames;
    },
    free() {
      src.destroy();
    },
  };
};

const ours =
  (impl: 'wasm' | 'js'): Factory =>
  async (inRate, outRate) =>
    createResampler(inRate, outRate, { impl });

const RESAMPLERS: ReadonlyArray<readonly [string, Factory]> = [
  ['ours', ours('wasm')],
  ['ours-js', ours('js')],
  ['speex-q5-simd', speex('@echogarden/speex-resampler-wasm/simd', 5)],
  ['speex-q5', speex('@echogarden/speex-resampler-wasm', 5)],
  ['speex-q3-simd', speex('@echogarden/speex-resampler-wasm/simd', 3)],
  ['libsamplerate-medium', libsamplerateMedium],
];

function sine(rate: number, hz: number, samples: number, amplitude: number): Int16Array {
  const x = new Int16Array(samples);
  for (let n = 0; n < samples; n++) x[n] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * n) / rate));
  return x;
}

/** Streams `x` through a fresh resampler in 20 ms chunks; the whole output. */
async function streamAll(
  factory: Factory,
  inRate: number,
  outRate: number,
  x: Int16Array,
): Promise<Int16Array> {
  const s = await factory(inRate, outRate);
  const chunk = inRate / 50;
  const out = new Int16Array(Math.ceil((x.length * outRate) / inRate) + 64);
  const scratch = new Int16Array(Math.ceil((chunk * outRate) / inRate) + 64);
  let w = 0;
  for (let r = 0; r + chunk <= x.length; r += chunk) {
    const n = s.process(x.subarray(r, r + chunk), scratch);
    out.set(scratch.subarray(0, n), w);
    w += n;
  }
  s.free();
  return out.subarray(0, w);
}

/** Folds a frequency into 0..rate/2 (where a component at `hz` lands after sampling at `rate`). */
function fold(hz: number, rate: number): number {
  const f = hz % rate;
  return f > rate / 2 ? rate - f : f;
}

async function quality(factory: Factory, inRate: number, outRate: number) {
  const seconds = 1.5;
  // Skip the first 0.3 s (start-up and latency of every resampler here) and the last 20 ms.
  const from = Math.round(0.3 * outRate);
  let snr = Number.POSITIVE_INFINITY;
  let alias = Number.POSITIVE_INFINITY;
  for (const hz of PASSBAND_TONES) {
    const y = await streamAll(factory, inRate, outRate, sine(inRate, hz, inRate * seconds, AMPLITUDE));
    const to = y.length - outRate / 50;
    snr = Math.min(snr, toneSnrDb(y, outRate, hz, AMPLITUDE, from, to));
    if (outRate > inRate) {
      // Images of the input band mirror about the input rate's multiples.
      const image = inRate - hz;
      alias = Math.min(alias, levelBelowDb(y, outRate, image, AMPLITUDE, [hz], from, to));
    }
  }
  if (outRate < inRate) {
    // Tones from the stopband edge (0.5625 * outRate) up to the input's band: their aliases.
    const tones = [0.5625, 0.625, 0.75, 0.875, 1.25].map((k) => k * outRate).filter((f) => f < 0.48 * inRate);
    for (const hz of tones) {
      const y = await streamAll(factory, inRate, outRate, sine(inRate, hz, inRate * seconds, AMPLITUDE));
      const to = y.length - outRate / 50;
      alias = Math.min(alias, levelBelowDb(y, outRate, fold(hz, outRate), AMPLITUDE, [], from, to));
    }
  }
  return { aliasDb: Math.min(alias, FLOOR_DB), passbandSnrDb: snr };
}

/** A program-like signal: two tones and noise, 10 s, looped. Content does not change the work done. */
function programme(rate: number): Int16Array {
  const x = new Int16Array(rate * 10);
  let s = 12345;
  for (let n = 0; n < x.length; n++) {
    s = (s * 1103515245 + 12345) >>> 0;
    const noise = (s / 4294967296 - 0.5) * 4000;
    const v =
      9000 * Math.sin((2 * Math.PI * 440 * n) / rate) + 7000 * Math.sin((2 * Math.PI * 2100 * n) / rate);
    x[n] = Math.round(v + noise);
  }
  return x;
}

/** Seconds of audio per CPU second over `chunks` 20 ms chunks (views made before timing). */
function timeRun(s: Stream, views: Int16Array[], out: Int16Array, chunks: number): number {
  const start = process.cpuUsage();
  for (let i = 0; i < chunks; i++) s.process(views[i % views.length]!, out);
  const used = process.cpuUsage(start);
  const cpu = (used.user + used.system) / 1e6;
  return (chunks * 0.02) / cpu;
}

async function speed(factory: Factory, inRate: number, outRate: number, estimate: number | undefined) {
  const x = programme(inRate);
  const chunk = inRate / 50;
  const views: Int16Array[] = [];
  for (let r = 0; r + chunk <= x.length; r += chunk) views.push(x.subarray(r, r + chunk));
  const out = new Int16Array(Math.ceil((chunk * outRate) / inRate) + 64);
  const s = await factory(inRate, outRate);
  // Warm up (JIT tiers, caches), then size the run to about TARGET_CPU_S of CPU.
  const warm = timeRun(s, views, out, 500);
  const xrt = estimate ?? warm;
  const chunks = Math.max(200, Math.round((TARGET_CPU_S * xrt) / 0.02));
  const result = timeRun(s, views, out, chunks);
  s.free();
  return result;
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function machine() {
  const cpuinfo = (() => {
    try {
      return readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      return '';
    }
  })();
  const model = /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? cpus()[0]?.model ?? 'unknown';
  return {
    nproc: availableParallelism(),
    cpu: model.trim(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    date: new Date().toISOString(),
  };
}

interface Entry {
  xrt: number;
  usPerChunk: number;
  aliasDb: number;
  passbandSnrDb: number;
  spread: number;
  rounds: number[];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const ri = args.indexOf('--rounds');
  const rounds = ri >= 0 ? Number(args[ri + 1]) : 5;
  const log = (msg: string) => {
    if (!json) process.stderr.write(msg);
  };

  const conversions: Record<string, Record<string, Entry>> = {};
  const samples: Record<string, Record<string, number[]>> = {};
  const quals: Record<string, Record<string, { aliasDb: number; passbandSnrDb: number }>> = {};
  for (const [i, o] of CONVERSIONS) {
    const key = `${i}->${o}`;
    samples[key] = {};
    quals[key] = {};
    for (const [name, f] of RESAMPLERS) {
      log(`quality ${key} ${name}\n`);
      quals[key][name] = await quality(f, i, o);
      samples[key][name] = [];
    }
  }
  // Rounds interleave every resampler and conversion, so a noisy neighbour spreads over all of them.
  for (let r = 0; r < rounds; r++) {
    log(`round ${r + 1}/${rounds}\n`);
    for (const [i, o] of CONVERSIONS) {
      const key = `${i}->${o}`;
      for (const [name, f] of RESAMPLERS) {
        const prev = samples[key]![name]!;
        prev.push(await speed(f, i, o, prev.length > 0 ? median(prev) : undefined));
      }
    }
  }
  const goals: Record<string, { anchor: string; anchorXrt: number; ratio: number; met: boolean }> = {};
  for (const [i, o] of CONVERSIONS) {
    const key = `${i}->${o}`;
    const entries: Record<string, Entry> = {};
    for (const [name] of RESAMPLERS) {
      const xs = samples[key]![name]!;
      const med = median(xs);
      const q = quals[key]![name]!;
      entries[name] = {
        xrt: round(med, 0),
        usPerChunk: round(20_000 / med, 2),
        aliasDb: round(q.aliasDb, 1),
        passbandSnrDb: round(q.passbandSnrDb, 1),
        spread: round(((Math.max(...xs) - Math.min(...xs)) / med) * 100, 1),
        rounds: xs.map((v) => round(v, 0)),
      };
    }
    conversions[key] = entries;
    // The goal: ours >= 2x the fastest anchor that reaches alias >= 80 dB and passband SNR >= 60 dB.
    let anchor = '';
    let anchorXrt = 0;
    for (const [name] of RESAMPLERS) {
      if (name.startsWith('ours')) continue;
      const e = entries[name]!;
      if (e.aliasDb >= 80 && e.passbandSnrDb >= 60 && e.xrt > anchorXrt) {
        anchor = name;
        anchorXrt = e.xrt;
      }
    }
    const ratio = anchorXrt > 0 ? entries['ours']!.xrt / anchorXrt : Number.POSITIVE_INFINITY;
    goals[key] = { anchor, anchorXrt, ratio: round(ratio, 2), met: ratio >= 2 };
  }

  const result = { conversions, goals, machine: machine(), rounds };
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const m = result.machine;
  console.log(`\n${m.cpu}, ${m.nproc} cores, node ${m.node}; ${rounds} rounds, 20 ms chunks, PCM16 in/out\n`);
  console.log(
    'conversion     resampler              x realtime   us/chunk   spread   alias dB   passband SNR dB',
  );
  for (const [key, entries] of Object.entries(conversions)) {
    for (const [name, e] of Object.entries(entries)) {
      console.log(
        `${key.padEnd(14)} ${name.padEnd(22)} ${String(e.xrt).padStart(10)} ${e.usPerChunk.toFixed(2).padStart(10)} ${`${e.spread}%`.padStart(8)} ${(e.aliasDb >= FLOOR_DB ? `>=${FLOOR_DB}` : String(e.aliasDb)).padStart(10)} ${String(e.passbandSnrDb).padStart(17)}`,
      );
    }
    const g = goals[key]!;
    console.log(
      `${''.padEnd(14)} goal: ours / ${g.anchor} = ${g.ratio}x (want >= 2x): ${g.met ? 'met' : 'MISSED'}\n`,
    );
  }
}

function round(v: number, digits: number): number {
  const k = 10 ** digits;
  return Math.round(v * k) / k;
}

await main();
