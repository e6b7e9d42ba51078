/**
 * The worker-thread pipeline, main-thread side. Sessions are pinned to the least-loaded worker. Every
 * record submitted during one event-loop turn is staged per worker in a shared page and handed over by
 * one message from a single setImmediate: one wake-up per turn per worker, whatever the session count
 * (bench/pipeline-transport.ts measures batches against SharedArrayBuffer rings and per-frame messages).
 * Pages are reused both ways (src/pipeline/protocol.ts), so a batch allocates nothing. Sinks get views
 * into a reply page, valid during the call only (src/pipeline/types.ts).
 *
 * Order: a session's records go to one worker, in one staging buffer, over one FIFO port, and the worker
 * runs them in order, so its outputs come back in order.
 *
 * Bounds: at most MAX_IN_FLIGHT batches per worker; behind that, records wait in the staging buffer,
 * and past STAGING_MAX_BYTES new chunks are dropped and counted (shed, not queued without bound).
 *
 * Failure: a worker that exits for any reason other than close() (uncaught error, process.exit, OOM, or
 * the watchdog terminating one that stopped answering) is replaced at once, or after a growing delay
 * when replacements keep dying before answering anything (a crash loop must not spin a core). Its
 * sessions are re-opened first in the new worker's first batch, each sink gets one onGap per death, and
 * dspGaps counts them. Audio in flight in the dead worker is lost, nothing else; other workers' sessions
 * never notice.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { samplesIn } from '../audio/codec.js';
import type { Codec } from '../audio/format.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import {
  align4,
  type BatchWriter,
  batchEnd,
  CONTROL_BYTES,
  FAULT_EXIT,
  FAULT_HANG,
  FAULT_THROW,
  HEADER_BYTES,
  K_BOT,
  K_CALLER,
  K_CLOSE,
  K_ERROR,
  K_FAULT,
  K_TO_BOT,
  K_TO_CALLER,
  type Page,
  type PageMessage,
  PageReader,
  PageWriter,
  RECORD_HEADER_BYTES,
  TO_MAIN,
  TO_WORKER,
} from './protocol.js';
import { checkSpec } from './spec.js';
import type {
  DspPipeline,
  PipelineSession,
  PipelineSessionSpec,
  PipelineSink,
  WorkerFault,
} from './types.js';

/** Batches a worker may hold unanswered; more would only queue inside it, out of our sight. */
const MAX_IN_FLIGHT = 2;
/** Initial staging: one tick of ~500 sessions both ways at 8/16 kHz. */
const STAGING_INITIAL_BYTES = 512 * 1024;
/** ~0.5 s of 1,000 sessions' audio both ways; beyond it, shed. */
const STAGING_MAX_BYTES = 16 * 1024 * 1024;
/** A worker holding batches this long without answering is presumed hung and replaced. */
const WATCHDOG_MS = 2000;
/** Respawn delay after the 2nd, 3rd... death in a row without a batch answered: 100 ms doubling to 5 s. */
const RESPAWN_BASE_MS = 100;
const RESPAWN_MAX_MS = 5000;

/**
 * The worker entry. Under tsx or vitest this module is TypeScript, so the entry is too: a one-line
 * bootstrap registers tsx's loader inside the worker, then imports it (Node 20 does not apply
 * `execArgv: ['--import', 'tsx']` to a worker's entry module). From dist/ it is plain JavaScript.
 */
const SELF_IS_TS = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(SELF_IS_TS ? './worker.ts' : './worker.js', import.meta.url);

function workerEntry(): { entry: URL | string; eval: boolean } {
  if (!SELF_IS_TS) return { entry: WORKER_URL, eval: false };
  // The ESM build of tsx's API; its CommonJS twin cannot register from an eval'd worker.
  const api = createRequire(import.meta.url)
    .resolve('tsx/esm/api')
    .replace(/\.cjs$/, '.mjs');
  const boot = `import(${JSON.stringify(pathToFileURL(api).href)}).then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); })`;
  return { entry: boot, eval: true };
}

class WorkerSession implements PipelineSession {
  closed = false;
  readonly inCodec: Codec;

  constructor(
    readonly owner: WorkerPipeline,
    readonly id: number,
    readonly spec: PipelineSessionSpec,
    readonly sink: PipelineSink,
    public slot: Slot,
  ) {
    this.inCodec = spec.callerIn.codec;
  }

  fromCaller(data: Uint8Array): void {
    if (this.closed) return;
    samplesIn(this.inCodec, data.byteLength); // odd PCM16 throws here, to the caller, as inline does
    this.owner.submit(this, K_CALLER, data);
  }

  fromBot(data: Uint8Array): void {
    if (this.closed) return;
    samplesIn('slin', data.byteLength);
    this.owner.submit(this, K_BOT, data);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.owner.remove(this);
  }
}

/** The pages shared with one worker (a new set per worker: a dead one may have left any page half-done). */
class Pages {
  readonly control = new SharedArrayBuffer(CONTROL_BYTES);
  readonly out: PageWriter;
  readonly replies: PageReader;

  constructor() {
    const flags = new Int32Array(this.control);
    this.out = new PageWriter(flags, TO_WORKER, STAGING_INITIAL_BYTES, STAGING_MAX_BYTES);
    this.replies = new PageReader(flags, TO_MAIN);
  }
}

class Slot {
  /** Null between a death and its replacement (only while backing off from a crash loop). */
  worker: Worker | null = null;
  /** Deaths in a row with no batch answered: a worker that cannot even start is retried with backoff. */
  failures = 0;
  respawnTimer: NodeJS.Timeout | undefined;
  pages = new Pages();
  /** The page records are staged in until the next send. */
  page: Page = this.pages.out.acquire()!;
  readonly sessions = new Set<WorkerSession>();
  inFlight = 0;
  /** When the oldest unanswered batch was sent (watchdog). */
  waitingSince = 0;
  generation = 0;
  /** Bound once per worker: the port's message handler (no closure per batch or frame). */
  onMessage!: (message: PageMessage) => void;

  constructor(readonly index: number) {}

  get staging(): BatchWriter {
    return this.page.writer;
  }
}

export class WorkerPipeline implements DspPipeline {
  readonly workers: number;
  private readonly slots: Slot[] = [];
  private readonly byId = new Map<number, WorkerSession>();
  private nextId = 1;
  private flushScheduled = false;
  private closing = false;
  private dropped = 0;
  private replaced = 0;
  private readonly watchdog: NodeJS.Timeout;
  private readonly flushAll = (): void => this.flush();

  constructor(
    workers: number,
    private readonly log: Logger | undefined,
    private readonly metrics: Metrics | undefined,
  ) {
    this.workers = workers;
    for (let i = 0; i < workers; i++) {
      const slot = new Slot(i);
      this.slots.push(slot);
      this.spawn(slot);
    }
    this.watchdog = setInterval(() => this.checkHung(), WATCHDOG_MS / 4);
    this.watchdog.unref();
  }

  open(spec: PipelineSessionSpec, sink: PipelineSink, near?: PipelineSession): PipelineSession {
    if (this.closing) throw new Error('the DSP pipeline is closed');
    checkSpec(spec);
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.sessions.size < slot.sessions.size) slot = s;
    // Beside `near` (a call's other direction): a worker's loss then reaches half as many calls.
    if (near instanceof WorkerSession && near.owner === this && !near.closed) slot = near.slot;
    const id = this.nextId++;
    if (this.nextId > 0x7fffffff) this.nextId = 1;
    const session = new WorkerSession(this, id, spec, sink, slot);
    slot.sessions.add(session);
    this.byId.set(id, session);
    if (!slot.staging.putOpen(id, spec)) this.dropped++;
    this.schedule();
    return session;
  }

  /** @internal */
  submit(session: WorkerSession, kind: number, data: Uint8Array): void {
    if (!session.slot.staging.put(session.id, kind, data)) {
      this.dropped++;
      this.metrics?.shedChunks.inc({ reason: 'dsp_backlog' });
      return;
    }
    if (!this.flushScheduled) this.schedule();
  }

  /** @internal */
  remove(session: WorkerSession): void {
    session.slot.sessions.delete(session);
    this.byId.delete(session.id);
    session.slot.staging.putInt(session.id, K_CLOSE, 0);
    this.schedule();
  }

  workerOf(session: PipelineSession): number {
    return session instanceof WorkerSession ? session.slot.index : -1;
  }

  injectWorkerFault(worker: number, fault: WorkerFault): void {
    const slot = this.slots[worker];
    if (slot === undefined) throw new RangeError(`no worker ${worker}; there are ${this.workers}`);
    const mode = fault === 'throw' ? FAULT_THROW : fault === 'exit' ? FAULT_EXIT : FAULT_HANG;
    slot.staging.putInt(0, K_FAULT, mode);
    this.schedule();
  }

  stats() {
    return {
      sessions: this.byId.size,
      dropped: this.dropped,
      replaced: this.replaced,
      perWorker: this.slots.map((s) => s.sessions.size),
    };
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.watchdog);
    for (const slot of this.slots) clearTimeout(slot.respawnTimer);
    for (const s of this.byId.values()) s.closed = true;
    this.byId.clear();
    await Promise.all(this.slots.map((s) => s.worker?.terminate()));
    this.log?.debug({ workers: this.workers }, 'dsp workers stopped');
  }

  private schedule(): void {
    if (this.flushScheduled || this.closing) return;
    this.flushScheduled = true;
    setImmediate(this.flushAll);
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closing) return;
    for (const slot of this.slots) this.send(slot);
  }

  private send(slot: Slot): void {
    if (slot.worker === null || slot.staging.records === 0 || slot.inFlight >= MAX_IN_FLIGHT) return;
    // The next staging page first: with every page still at the worker it is not answering, and the
    // records wait here until the watchdog replaces it.
    const next = slot.pages.out.acquire();
    if (next === undefined) return;
    const message = slot.pages.out.message(slot.page);
    slot.page = next;
    if (slot.inFlight === 0) slot.waitingSince = performance.now();
    slot.inFlight++;
    slot.worker.postMessage(message);
  }

  private spawn(slot: Slot): void {
    if (this.closing) return;
    const generation = ++slot.generation;
    const { entry, eval: isEval } = workerEntry();
    const worker = new Worker(entry, { eval: isEval, workerData: { control: slot.pages.control } });
    // Never keeps the process alive by itself: a server has its sockets for that.
    worker.unref();
    slot.worker = worker;
    slot.inFlight = 0;
    slot.onMessage = (message) => this.receive(slot, generation, message);
    worker.on('message', slot.onMessage);
    worker.on('error', (err) => {
      this.log?.error({ err, worker: slot.index }, 'dsp worker failed');
    });
    worker.on('exit', (code) => this.onExit(slot, generation, code));
  }

  private receive(slot: Slot, generation: number, message: PageMessage): void {
    if (this.closing || generation !== slot.generation) return;
    slot.inFlight--;
    slot.failures = 0;
    slot.waitingSince = performance.now();
    const replies = slot.pages.replies;
    const page = replies.open(message);
    const u8 = replies.u8(page);
    const i32 = replies.i32(page);
    this.metrics?.dspSeconds.inc(replies.header(page));
    const end = batchEnd(i32);
    for (let off = HEADER_BYTES; off < end; ) {
      const h = off >> 2;
      const id = i32[h]!;
      const kind = i32[h + 1]!;
      const len = i32[h + 2]!;
      const at = off + RECORD_HEADER_BYTES;
      off = at + align4(len);
      const session = this.byId.get(id);
      if (session === undefined || session.closed) continue;
      // A view for the length of the call: sinks copy what they keep (src/pipeline/types.ts).
      try {
        if (kind === K_TO_BOT) session.sink.toBot(u8.subarray(at, at + len));
        else if (kind === K_TO_CALLER) session.sink.toCaller(u8.subarray(at, at + len));
        else if (kind === K_ERROR) {
          const text = Buffer.from(u8.buffer, at, len).toString('utf8');
          this.log?.warn({ session: id, worker: slot.index, message: text }, 'dsp chunk failed; skipped');
        }
      } catch (err) {
        // A throwing sink must not take the other sessions of this batch (or the process) with it.
        this.log?.error({ err, session: id }, 'pipeline sink threw');
      }
    }
    replies.release(page);
    if (!this.closing) this.send(slot);
  }

  private onExit(slot: Slot, generation: number, code: number): void {
    if (this.closing || generation !== slot.generation) return;
    this.replaced++;
    slot.worker = null;
    slot.inFlight = 0;
    // The new worker's first batch re-opens every session of the slot, then carries whatever was
    // staged for the dead one (records for it were never sent, so nothing is duplicated).
    const pending = slot.staging;
    slot.pages = new Pages();
    slot.page = slot.pages.out.acquire()!;
    for (const s of slot.sessions) slot.staging.putOpen(s.id, s.spec);
    if (!slot.staging.append(pending)) this.dropped += pending.records;
    const delayMs =
      slot.failures === 0 ? 0 : Math.min(RESPAWN_MAX_MS, RESPAWN_BASE_MS * 2 ** (slot.failures - 1));
    slot.failures++;
    this.log?.error(
      { worker: slot.index, exitCode: code, sessions: slot.sessions.size, respawnDelayMs: delayMs },
      'dsp worker died; replaced, its sessions go on with fresh DSP state',
    );
    this.metrics?.dspGaps.inc(slot.sessions.size);
    for (const s of slot.sessions) {
      try {
        s.sink.onGap?.(`dsp worker ${slot.index} died (exit code ${code}); audio in flight was lost`);
      } catch (err) {
        this.log?.error({ err, session: s.id }, 'pipeline sink threw in onGap');
      }
    }
    if (delayMs === 0) this.respawn(slot);
    else {
      slot.respawnTimer = setTimeout(() => this.respawn(slot), delayMs);
      slot.respawnTimer.unref();
    }
  }

  private respawn(slot: Slot): void {
    if (this.closing) return;
    this.spawn(slot);
    this.schedule();
  }

  private checkHung(): void {
    const now = performance.now();
    for (const slot of this.slots) {
      if (slot.inFlight > 0 && now - slot.waitingSince > WATCHDOG_MS) {
        this.log?.error(
          { worker: slot.index, waitedMs: Math.round(now - slot.waitingSince) },
          'dsp worker hung',
        );
        slot.inFlight = 0;
        // Its exit event replaces it; until then nothing more is sent to it.
        void slot.worker?.terminate();
        slot.worker = null;
      }
    }
  }
}
