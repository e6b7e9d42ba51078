/**
 * A DSP worker thread: takes one batch (src/pipeline/protocol.ts) per message, runs every record in
 * order, answers with one batch. Batches arrive and leave in shared pages that are reused, so a batch
 * costs no allocation here. Legs live here between batches; the main thread re-opens them on a fresh
 * worker when this one dies. A marker is handed back in place among its leg's output, which is all the
 * ordering there is. The noise suppressor is loaded before the first batch is read (batches sent meanwhile
 * wait in the port); a leg whose suppressor fails is answered with one K_STEP_FAILED and goes on plain.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { LegDsp } from './dsp.js';
import {
  type BatchWriter,
  batchEnd,
  FAULT_DENOISE,
  FAULT_EXIT,
  FAULT_HANG,
  FAULT_SLOW,
  FAULT_THROW,
  forEachRecord,
  K_AUDIO,
  K_CLOSE,
  K_ERROR,
  K_FAULT,
  K_MARKER,
  K_OPEN,
  K_OUT,
  K_RESET,
  K_STEP_FAILED,
  type PageMessage,
  PageReader,
  PageWriter,
  readOpen,
  TO_MAIN,
  TO_WORKER,
} from './protocol.js';
import { loadSuppressor } from './suppressor.js';

const port = parentPort;
if (port === null) throw new Error('src/pipeline/worker is a worker thread entry, not a module to import');
const { control, suppressor: suppressorModule } = workerData as {
  control: SharedArrayBuffer;
  /** The suppressor's module specifier (tests name a missing one); undefined: the package. */
  suppressor: string | undefined;
};
const flags = new Int32Array(control);
const suppressor = await loadSuppressor(suppressorModule);

const legs = new Map<number, LegDsp>();
const inbox = new PageReader(flags, TO_WORKER);
/** Replies: 256 KB pages, growing for a big batch; 64 MB bounds a pathological one. */
const outbox = new PageWriter(flags, TO_MAIN, 256 * 1024, 64 * 1024 * 1024);
const encoder = new TextEncoder();
let faultAfterBatch = 0;
/** FAULT_SLOW: each batch from then on is held this long (a test of ordering under a slow worker). */
let slowMs = 0;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function fault(mode: number, arg: number): void {
  if (mode === FAULT_EXIT) process.exit(70);
  if (mode === FAULT_HANG) for (;;);
  if (mode === FAULT_THROW) faultAfterBatch = mode;
  if (mode === FAULT_SLOW) slowMs = arg;
  if (mode === FAULT_DENOISE && !(suppressor instanceof Error)) {
    // Every state in this worker shares the module: each throws at its next frame, as a trap would.
    suppressor._rnnoise_process_frame = () => {
      throw new Error('injected noise suppressor fault');
    };
  }
}

/** A leg's suppressor failure, once: the main thread logs and counts it. */
function reportFailure(id: number, dsp: LegDsp): void {
  const failure = dsp.takeFailure();
  if (failure !== undefined) out.put(id, K_STEP_FAILED, encoder.encode(failure));
}

function reportError(out: BatchWriter, id: number, err: unknown): void {
  const text = encoder.encode(err instanceof Error ? err.message : String(err));
  out.put(id, K_ERROR, text);
}

let out: BatchWriter;
let u8: Uint8Array;
let i32: Int32Array;

function run(id: number, kind: number, generation: number, at: number, len: number): void {
  // One bad record (say, a resampler that throws) costs that chunk, not the worker and its legs.
  try {
    if (kind === K_AUDIO) {
      const dsp = legs.get(id);
      if (dsp === undefined) return; // closed while the chunk was in flight
      const dst = out.begin(id, K_OUT, dsp.bytesFor(len), false, generation);
      if (dst < 0) throw new Error('reply batch over its bound');
      out.end(dst, dsp.run(u8.subarray(at, at + len), out.u8, dst));
      reportFailure(id, dsp);
    } else if (kind === K_MARKER) {
      out.putInt(id, K_MARKER, i32[at >> 2]!);
    } else if (kind === K_RESET) {
      const dsp = legs.get(id);
      dsp?.reset();
      if (dsp !== undefined) reportFailure(id, dsp);
    } else if (kind === K_OPEN) {
      legs.get(id)?.free();
      const dsp = new LegDsp(readOpen(i32, at), suppressor);
      legs.set(id, dsp);
      reportFailure(id, dsp);
    } else if (kind === K_CLOSE) {
      legs.get(id)?.free();
      legs.delete(id);
    } else if (kind === K_FAULT) {
      fault(i32[at >> 2]!, i32[(at >> 2) + 1]!);
    }
  } catch (err) {
    reportError(out, id, err);
  }
}

port.on('message', (message: PageMessage) => {
  const t0 = performance.now();
  const inId = inbox.open(message);
  u8 = inbox.u8(inId);
  i32 = inbox.i32(inId);
  // The main thread releases each reply before it sends another batch, so at most MAX_IN_FLIGHT
  // replies are ever held: running out means a broken main thread, and this worker dies to say so.
  const page = outbox.acquire();
  if (page === undefined) throw new Error('every reply page is with the main thread');
  out = page.writer;
  forEachRecord(i32, batchEnd(i32), run);
  inbox.release(inId);
  // Wall time on this thread, one clock read per batch: Node 20 has no per-thread CPU clock
  // (process.cpuUsage() is the whole process's), and a busy DSP thread's wall time is its CPU time
  // unless the OS preempts it.
  const seconds = (performance.now() - t0) / 1000;
  if (slowMs > 0) Atomics.wait(sleeper, 0, 0, slowMs);
  port.postMessage(outbox.message(page, seconds));
  if (faultAfterBatch === FAULT_THROW) {
    faultAfterBatch = 0;
    // Uncaught, on purpose: the worker dies the way a bug would kill it.
    throw new Error('injected DSP worker fault');
  }
});
