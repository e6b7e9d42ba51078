/**
 * "No allocation per chunk": the resampler (both implementations) and a leg's whole DSP chain
 * (decode, resample, encode; with the noise suppressor too) run 20 ms chunks without allocating on the
 * JS heap, and neither does the main thread of a worker pipeline as its legs' chunks come and go. Measured by V8's
 * new-space usage (every JS allocation lands there first) over two runs of different lengths with no
 * garbage collection inside either: what grows with the chunk count is allocation per chunk; one-off
 * allocations (the JIT settling, a lazy table) cancel out. The smallest JS object is 12-16 bytes.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { createResampler, type ResamplerImpl } from '../../src/audio/resampler.js';
import { LegDsp } from '../../src/pipeline/dsp.js';
import { createPipeline } from '../../src/pipeline/index.js';
import { loadSuppressor } from '../../src/pipeline/suppressor.js';
import type { Leg, LegSpec } from '../../src/pipeline/types.js';

const SHORT = 2_000;
const LONG = 6_000;
/** Bytes per chunk allowed: below the smallest object a chunk could allocate. */
const MAX_BYTES_PER_CHUNK = 4;

function newSpaceUsed(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_used_size;
}

let gcs = 0;
const observer = new PerformanceObserver((list) => {
  gcs += list.getEntries().length;
});
observer.observe({ entryTypes: ['gc'] });

/**
 * New-space bytes `run` allocates over CHUNKS calls, from a run no collection interrupted (retried a
 * few times: a collection can land anywhere). The observer's entries arrive asynchronously, so each try
 * waits a turn before reading the count.
 */
async function allocatedBy(run: (i: number) => void, chunks: number): Promise<number> {
  for (let attempt = 0; attempt < 5; attempt++) {
    await new Promise((r) => setImmediate(r));
    const before = gcs;
    const used0 = newSpaceUsed();
    for (let i = 0; i < chunks; i++) run(i);
    const used1 = newSpaceUsed();
    await new Promise((r) => setImmediate(r));
    if (gcs === before && used1 >= used0) return used1 - used0;
  }
  throw new Error('every try was interrupted by a garbage collection');
}

/** JS-heap bytes `run` allocates per call, from the difference of a short and a long run. */
async function bytesPerChunk(run: (i: number) => void): Promise<number> {
  for (let i = 0; i < 1_000; i++) run(i); // warm up: JIT tiers and lazy set-up happen here
  const short = await allocatedBy(run, SHORT);
  const long = await allocatedBy(run, LONG);
  return (long - short) / (LONG - SHORT);
}

function tone(samples: number, rate: number): Int16Array {
  const t = new Int16Array(samples);
  for (let i = 0; i < samples; i++) t[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  return t;
}

describe('no allocation per chunk', () => {
  for (const impl of ['wasm', 'js'] as ResamplerImpl[]) {
    for (const [from, to] of [
      [8000, 16000],
      [16000, 8000],
      [24000, 16000],
      [22050, 8000],
    ] as const) {
      it(`resampler ${impl} ${from} -> ${to}, 20 ms chunks`, async () => {
        const r = createResampler(from, to, { impl });
        const input = tone(Math.round(from / 50), from);
        const output = new Int16Array(r.maxOutput(input.length));
        const bytes = await bytesPerChunk(() => r.process(input, output));
        r.free();
        expect(bytes).toBeLessThan(MAX_BYTES_PER_CHUNK);
      });
    }
    for (const [from, to] of [
      [8000, 16000],
      [48000, 16000],
      [24000, 16000],
    ] as const) {
      it(`resampler ${impl} processBytes ${from} -> ${to}, 20 ms chunks at an odd byte offset`, async () => {
        const r = createResampler(from, to, { impl });
        const samples = from / 50; // 960 at 48 kHz: longer than one kernel call takes
        const read = Buffer.alloc(2 * samples + 1);
        Buffer.from(tone(samples, from).buffer).copy(read, 1);
        const input = read.subarray(1);
        const bytes = await bytesPerChunk(() => r.processBytes(input));
        r.free();
        expect(bytes).toBeLessThan(MAX_BYTES_PER_CHUNK);
      });
    }
  }

  it("a call's two legs: pcmu 8 kHz caller, 16 kHz bot", async () => {
    const up = new LegDsp({ from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'slin', rate: 16000 } });
    const down = new LegDsp({ from: { codec: 'slin', rate: 16000 }, to: { codec: 'pcmu', rate: 8000 } });
    const caller = new Uint8Array(160).fill(0x55);
    const bot = new Uint8Array(tone(320, 16000).buffer);
    const toBot = new Uint8Array(up.bytesFor(caller.length));
    const toCaller = new Uint8Array(down.bytesFor(bot.length));
    const bytes = await bytesPerChunk(() => {
      up.run(caller, toBot, 0);
      down.run(bot, toCaller, 0);
    });
    up.free();
    down.free();
    expect(bytes).toBeLessThan(MAX_BYTES_PER_CHUNK);
  });

  it("a call's two legs: slin 16 kHz caller, 24 kHz bot, output at an odd place in a batch", async () => {
    const up = new LegDsp({ from: { codec: 'slin', rate: 16000 }, to: { codec: 'slin', rate: 24000 } });
    const down = new LegDsp({ from: { codec: 'slin', rate: 24000 }, to: { codec: 'slin', rate: 16000 } });
    const caller = new Uint8Array(tone(320, 16000).buffer);
    const bot = new Uint8Array(tone(480, 24000).buffer);
    // One long-lived buffer written at varying offsets, as a worker's reply batch is.
    const batch = new Uint8Array(64 * 1024);
    const bytes = await bytesPerChunk((i) => {
      const at = 2 * (i % 1000);
      up.run(caller, batch, at);
      down.run(bot, batch, at + 8 * 1024);
    });
    up.free();
    down.free();
    expect(bytes).toBeLessThan(MAX_BYTES_PER_CHUNK);
  });

  it('a codec-only leg (µ-law 8 kHz to PCM16 8 kHz, no resampler)', async () => {
    const leg = new LegDsp({ from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'slin', rate: 8000 } });
    const caller = new Uint8Array(160).fill(0x55);
    const out = new Uint8Array(leg.bytesFor(caller.length));
    const bytes = await bytesPerChunk(() => leg.run(caller, out, 0));
    leg.free();
    expect(bytes).toBeLessThan(MAX_BYTES_PER_CHUNK);
  });

  it('a caller leg with the noise suppressor: pcmu 8 kHz caller, 16 kHz bot', async () => {
    const leg = new LegDsp(
      { from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'slin', rate: 16000 }, steps: ['denoise'] },
      await loadSuppressor(),
    );
    expect(leg.denoising).toBe(true);
    const caller = new Uint8Array(160).fill(0x55);
    const out = new Uint8Array(leg.bytesFor(caller.length));
    const bytes = await bytesPerChunk(() => leg.run(caller, out, 0));
    expect(leg.denoising).toBe(true);
    leg.free();
    expect(bytes).toBeLessThan(MAX_BYTES_PER_CHUNK);
  });

  it("a worker pipeline's main thread, with the noise suppressor on the worker", async () => {
    const pipeline = createPipeline({ workers: 1 });
    const spec: LegSpec = {
      from: { codec: 'slin', rate: 8000 },
      to: { codec: 'slin', rate: 16000 },
      steps: ['denoise'],
    };
    let received = 0;
    let wanted = 0;
    let wake = () => {};
    const sink = {
      audio: (view: Uint8Array) => {
        received += view.length;
        if (received >= wanted) wake();
      },
      marker: () => {},
      reset: () => {},
      gap: () => {},
    };
    const legs: Leg[] = [];
    for (let i = 0; i < 60; i++) legs.push(pipeline.open(spec, sink));
    const chunk = new Uint8Array(tone(160, 8000).buffer);
    // One turn: a chunk from each of `n` legs, then the turns it takes for all their audio to come back
    // (640 bytes each once the suppressor's first frame is through).
    const turn = async (n: number) => {
      const p = new Promise<void>((r) => {
        wake = r;
      });
      wanted = received + n * 640;
      for (let i = 0; i < n; i++) legs[i]!.push(chunk);
      await p;
    };
    for (let i = 0; i < 100; i++) await turn(60); // warm up: the JIT, the pages, the views
    const measure = async (n: number, turns: number) => {
      for (let attempt = 0; attempt < 8; attempt++) {
        const before = gcs;
        const used0 = newSpaceUsed();
        for (let t = 0; t < turns; t++) await turn(n);
        const used1 = newSpaceUsed();
        await new Promise((r) => setImmediate(r));
        if (gcs === before && used1 >= used0) return used1 - used0;
      }
      throw new Error('every try was interrupted by a garbage collection');
    };
    const turns = 40;
    const few = await measure(10, turns);
    const many = await measure(60, turns);
    await pipeline.close();
    const perChunk = (many - few) / ((60 - 10) * turns);
    console.log(
      `worker pipeline main thread: ${(few / turns).toFixed(0)} bytes a turn of 10 chunks, ` +
        `${(many / turns).toFixed(0)} of 60: ${perChunk.toFixed(2)} bytes a chunk`,
    );
    expect(perChunk).toBeLessThan(MAX_BYTES_PER_CHUNK);
  });

  it('the measurement sees an allocation of one small object per chunk', async () => {
    const keep: unknown[] = new Array(LONG);
    const bytes = await bytesPerChunk((i) => {
      keep[i % LONG] = { i };
    });
    expect(bytes).toBeGreaterThan(MAX_BYTES_PER_CHUNK);
  });
});
