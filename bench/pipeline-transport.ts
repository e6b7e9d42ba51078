/**
 * How chunks should cross to a DSP worker, measured at 20 ms chunk sizes (320 bytes: 8 kHz PCM16).
 * Each 20 ms tick the main thread hands S frames to one worker, which copies each (the stand-in for DSP:
 * this measures the crossing, not the work) and hands S frames back; the main thread delivers each as
 * its own Uint8Array (what a sink needs). Three transports:
 *
 *   frame   one postMessage per frame, buffer transferred both ways
 *   batch   one transferred ArrayBuffer per tick carrying all S frames, one back (src/pipeline/pool.ts)
 *   ring    SharedArrayBuffer request/response areas, one Atomics.notify per tick; the worker blocks in
 *           Atomics.wait, the main thread in Atomics.waitAsync; replies are copied out of the ring
 *           (the ring is reused, the sink owns its bytes)
 *
 * Reported per transport and S: round trip of the tick (first frame sent -> last frame delivered)
 * p50/p99 in ms, and main-thread busy time per frame in us (event-loop utilisation, the main thread's
 * own CPU: what the socket work competes with).
 *
 *   npx tsx bench/pipeline-transport.ts [--json] [--seconds 3]
 */
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

const FRAME = 320;
const TICK_MS = 20;
const argv = process.argv.slice(2);
const SECONDS = Number(argv[argv.indexOf('--seconds') + 1] ?? 3) || 3;
const SIZES = [100, 500, 1000];
type Mode = 'frame' | 'batch' | 'ring';
const MODES: Mode[] = ['frame', 'batch', 'ring'];
const MAX_FRAMES = 1000;

/** Atomics.waitAsync is in Node 20 but not in the ES2023 lib the project compiles against. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(
      a: Int32Array,
      i: number,
      v: number,
    ): { async: false; value: string } | { async: true; value: Promise<string> };
  }
).waitAsync;

// Plain JavaScript, so it runs in a worker without a TypeScript loader.
const WORKER_SRC = `
const { parentPort, workerData } = require('node:worker_threads');
const FRAME = ${FRAME};
if (workerData.mode === 'frame') {
  parentPort.on('message', (buf) => {
    const out = new ArrayBuffer(buf.byteLength);
    new Uint8Array(out).set(new Uint8Array(buf));
    parentPort.postMessage(out, [out]);
  });
} else if (workerData.mode === 'batch') {
  parentPort.on('message', (buf) => {
    const out = new ArrayBuffer(buf.byteLength);
    new Uint8Array(out).set(new Uint8Array(buf));
    parentPort.postMessage(out, [out]);
  });
} else {
  const ctl = new Int32Array(workerData.ctl);
  const req = new Uint8Array(workerData.req);
  const res = new Uint8Array(workerData.res);
  let seen = 0;
  for (;;) {
    Atomics.wait(ctl, 0, seen);
    seen = Atomics.load(ctl, 0);
    const n = ctl[1];
    for (let i = 0; i < n; i++) res.set(req.subarray(i * FRAME, (i + 1) * FRAME), i * FRAME);
    Atomics.store(ctl, 2, seen);
    Atomics.notify(ctl, 2);
  }
}
`;

interface Result {
  tickP50Ms: number;
  tickP99Ms: number;
  mainUsPerFrame: number;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

async function run(mode: Mode, frames: number): Promise<Result> {
  const ctl = new SharedArrayBuffer(16);
  const req = new SharedArrayBuffer(MAX_FRAMES * FRAME);
  const res = new SharedArrayBuffer(MAX_FRAMES * FRAME);
  const worker = new Worker(WORKER_SRC, { eval: true, workerData: { mode, ctl, req, res } });
  const ctl32 = new Int32Array(ctl);
  const req8 = new Uint8Array(req);
  const res8 = new Uint8Array(res);
  const payload = new Uint8Array(FRAME).fill(7);
  const ticks: number[] = [];
  let delivered = 0;
  let bytes = 0;
  let tickStart = 0;
  let pending = 0;
  let done: (() => void) | null = null;
  const deliver = (view: Uint8Array) => {
    bytes += view.byteLength;
    delivered++;
  };
  const tickDone = () => {
    ticks.push(performance.now() - tickStart);
    done?.();
  };
  worker.on('message', (buf: ArrayBuffer) => {
    if (mode === 'frame') {
      deliver(new Uint8Array(buf));
      if (--pending === 0) tickDone();
    } else {
      for (let i = 0; i < frames; i++) deliver(new Uint8Array(buf, i * FRAME, FRAME));
      tickDone();
    }
  });
  await new Promise((r) => setTimeout(r, 200)); // worker start-up

  const totalTicks = Math.round((SECONDS * 1000) / TICK_MS);
  const warm = 10;
  let elu0 = performance.eventLoopUtilization();
  let seq = 0;
  for (let t = 0; t < totalTicks + warm; t++) {
    if (t === warm) {
      ticks.length = 0;
      elu0 = performance.eventLoopUtilization();
    }
    const due = performance.now() + TICK_MS;
    const finished = new Promise<void>((r) => {
      done = r;
    });
    tickStart = performance.now();
    if (mode === 'frame') {
      pending = frames;
      for (let i = 0; i < frames; i++) {
        const b = new ArrayBuffer(FRAME);
        new Uint8Array(b).set(payload);
        worker.postMessage(b, [b]);
      }
    } else if (mode === 'batch') {
      const b = new ArrayBuffer(frames * FRAME);
      const u = new Uint8Array(b);
      for (let i = 0; i < frames; i++) u.set(payload, i * FRAME);
      worker.postMessage(b, [b]);
    } else {
      for (let i = 0; i < frames; i++) req8.set(payload, i * FRAME);
      ctl32[1] = frames;
      seq++;
      Atomics.store(ctl32, 0, seq);
      Atomics.notify(ctl32, 0);
      const w = waitAsync(ctl32, 2, seq - 1);
      if (w.async) await w.value;
      for (let i = 0; i < frames; i++) deliver(res8.slice(i * FRAME, (i + 1) * FRAME));
      tickDone();
    }
    await finished;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  const elu = performance.eventLoopUtilization(elu0);
  await worker.terminate();
  ticks.sort((a, b) => a - b);
  if (bytes === 0 || delivered === 0) throw new Error('nothing delivered');
  return {
    tickP50Ms: round(pct(ticks, 0.5)),
    tickP99Ms: round(pct(ticks, 0.99)),
    mainUsPerFrame: round((elu.active * 1000) / (totalTicks * frames)),
  };
}

function round(v: number): number {
  return Math.round(v * 1000) / 1000;
}

const results: Record<string, Record<Mode, Result>> = {};
for (const frames of SIZES) {
  const row = {} as Record<Mode, Result>;
  for (const mode of MODES) row[mode] = await run(mode, frames);
  results[String(frames)] = row;
}

if (argv.includes('--json')) {
  console.log(
    JSON.stringify({ frameBytes: FRAME, tickMs: TICK_MS, seconds: SECONDS, framesPerTick: results }),
  );
} else {
  console.log(`one worker, ${FRAME}-byte frames, one tick per ${TICK_MS} ms, ${SECONDS} s per cell`);
  console.log('frames/tick  transport  tick round trip p50 / p99 ms   main-thread us per frame');
  for (const [frames, row] of Object.entries(results)) {
    for (const mode of MODES) {
      const r = row[mode];
      console.log(
        `${frames.padStart(11)}  ${mode.padEnd(9)}  ${r.tickP50Ms.toFixed(3).padStart(8)} / ${r.tickP99Ms.toFixed(3).padEnd(16)}  ${r.mainUsPerFrame.toFixed(2).padStart(8)}`,
      );
    }
  }
}
