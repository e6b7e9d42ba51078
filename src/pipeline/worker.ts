/**
 * A DSP worker thread: takes one batch (src/pipeline/protocol.ts) per message, runs every record in
 * order, answers with one batch. Batches arrive and leave in shared pages that are reused, so a batch
 * costs no allocation here. Sessions live here between batches; the main thread re-opens them on a
 * fresh worker when this one dies.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SessionDsp } from './dsp.js';
import {
  align4,
  type BatchWriter,
  batchEnd,
  FAULT_EXIT,
  FAULT_HANG,
  FAULT_THROW,
  HEADER_BYTES,
  K_BOT,
  K_CALLER,
  K_CLOSE,
  K_ERROR,
  K_FAULT,
  K_OPEN,
  K_TO_BOT,
  K_TO_CALLER,
  type PageMessage,
  PageReader,
  PageWriter,
  RECORD_HEADER_BYTES,
  readOpen,
  TO_MAIN,
  TO_WORKER,
} from './protocol.js';

const port = parentPort;
if (port === null) throw new Error('src/pipeline/worker is a worker thread entry, not a module to import');
const { control } = workerData as { control: SharedArrayBuffer };
const flags = new Int32Array(control);

const sessions = new Map<number, SessionDsp>();
const inbox = new PageReader(flags, TO_WORKER);
/** Replies: 256 KB pages, growing for a big batch; 64 MB bounds a pathological one. */
const outbox = new PageWriter(flags, TO_MAIN, 256 * 1024, 64 * 1024 * 1024);
const encoder = new TextEncoder();
let faultAfterBatch = 0;

function fault(mode: number): void {
  if (mode === FAULT_EXIT) process.exit(70);
  if (mode === FAULT_HANG) for (;;);
  if (mode === FAULT_THROW) faultAfterBatch = mode;
}

function reportError(out: BatchWriter, id: number, err: unknown): void {
  const text = encoder.encode(err instanceof Error ? err.message : String(err));
  out.put(id, K_ERROR, text);
}

function run(
  out: BatchWriter,
  id: number,
  kind: number,
  u8: Uint8Array,
  i32: Int32Array,
  at: number,
  len: number,
): void {
  if (kind === K_CALLER || kind === K_BOT) {
    const dsp = sessions.get(id);
    if (dsp === undefined) return; // closed while the chunk was in flight
    const data = u8.subarray(at, at + len);
    const caller = kind === K_CALLER;
    const max = caller ? dsp.botBytesFor(len) : dsp.callerBytesFor(len);
    const dst = out.begin(id, caller ? K_TO_BOT : K_TO_CALLER, max);
    if (dst < 0) throw new Error('reply batch over its bound');
    out.end(dst, caller ? dsp.callerToBot(data, out.u8, dst) : dsp.botToCaller(data, out.u8, dst));
  } else if (kind === K_OPEN) {
    sessions.get(id)?.free();
    sessions.set(id, new SessionDsp(readOpen(i32, at)));
  } else if (kind === K_CLOSE) {
    sessions.get(id)?.free();
    sessions.delete(id);
  } else if (kind === K_FAULT) {
    fault(i32[at >> 2]!);
  }
}

port.on('message', (message: PageMessage) => {
  const t0 = performance.now();
  const inId = inbox.open(message);
  const u8 = inbox.u8(inId);
  const i32 = inbox.i32(inId);
  const end = batchEnd(i32);
  // The main thread releases each reply before it sends another batch, so at most MAX_IN_FLIGHT
  // replies are ever held: running out means a broken main thread, and this worker dies to say so.
  const page = outbox.acquire();
  if (page === undefined) throw new Error('every reply page is with the main thread');
  const out = page.writer;
  for (let off = HEADER_BYTES; off < end; ) {
    const h = off >> 2;
    const id = i32[h]!;
    const kind = i32[h + 1]!;
    const len = i32[h + 2]!;
    const at = off + RECORD_HEADER_BYTES;
    // One bad record (say, a resampler that throws) costs that chunk, not the worker and its sessions.
    try {
      run(out, id, kind, u8, i32, at, len);
    } catch (err) {
      reportError(out, id, err);
    }
    off = at + align4(len);
  }
  inbox.release(inId);
  // Wall time on this thread, one clock read per batch: Node 20 has no per-thread CPU clock
  // (process.cpuUsage() is the whole process's), and a busy DSP thread's wall time is its CPU time
  // unless the OS preempts it.
  port.postMessage(outbox.message(page, (performance.now() - t0) / 1000));
  if (faultAfterBatch === FAULT_THROW) {
    faultAfterBatch = 0;
    // Uncaught, on purpose: the worker dies the way a bug would kill it.
    throw new Error('injected DSP worker fault');
  }
});
