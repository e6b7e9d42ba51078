/**
 * The worker-thread pipeline, main-thread side. Legs are pinned to the least-loaded worker (a call's two
 * legs to the same one). Every record submitted during one event-loop turn is staged per worker in a
 * shared page and handed over by one message from a single setImmediate: one wake-up per turn per worker,
 * whatever the leg count (bench/pipeline-transport.ts measures batches against SharedArrayBuffer rings and
 * per-frame messages). Pages are reused both ways (src/pipeline/protocol.ts), so a batch allocates
 * nothing per chunk. Sinks get a view of a scratch the reply's audio is copied into, valid during the
 * call only (src/pipeline/types.ts).
 *
 * Order: a leg's records (audio, markers, resets) go to one worker, in one staging buffer, over one FIFO
 * port, and the worker runs them in order, so its outputs and markers come back in order. A reset bumps
 * the leg's generation here at once; output stamped with an older one is dropped when it arrives.
 *
 * Bounds: at most MAX_IN_FLIGHT batches per worker; behind that, records wait in the staging buffer,
 * and past STAGING_MAX_BYTES new audio is dropped and counted (shed, not queued without bound); control
 * records (markers, resets) are never shed.
 *
 * Failure: a worker that exits for any reason other than close() (uncaught error, process.exit, OOM, or
 * the watchdog terminating one that stopped answering) is replaced at once, or after a growing delay
 * when replacements keep dying before answering anything (a crash loop must not spin a core). Its legs
 * are re-opened first in the new worker's first batch, each sink gets one `gap` per death, and dspGaps
 * counts them. Audio in flight in the dead worker is lost; its markers are not: each sink gets the ones
 * it had in flight right after its gap, in order. Other workers' legs never notice.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { samplesIn } from '../audio/codec.js';
import type { HeldUp } from '../held-up.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { PassLeg } from './pass.js';
import {
  type BatchWriter,
  batchEnd,
  CONTROL_BYTES,
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
  K_OUT,
  K_RESET,
  K_STEP_FAILED,
  type Page,
  type PageMessage,
  PageReader,
  PageWriter,
  TO_MAIN,
  TO_WORKER,
} from './protocol.js';
import { checkSpec } from './spec.js';
import {
  type DspPipeline,
  denoises,
  type Leg,
  type LegSink,
  type LegSpec,
  type OpenOptions,
  sameFormat,
  type WorkerFault,
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

class WorkerLeg implements Leg {
  closed = false;
  /** Until a worker says its suppressor failed: then the leg is re-opened without it after a crash too. */
  denoising: boolean;
  /** Resets so far: audio records carry it, and output from an older generation is dropped. */
  generation = 0;
  /** Audio pushed since the last reset. */
  hadAudio = false;
  /** Markers handed to the worker and not back yet, oldest first: the sink gets them if it dies. */
  readonly markers: number[] = [];

  constructor(
    readonly owner: WorkerPipeline,
    readonly id: number,
    readonly spec: LegSpec,
    readonly sink: LegSink,
    public slot: Slot,
    readonly log: Logger | undefined,
  ) {
    this.denoising = denoises(spec);
  }

  /** What a (re-)opened worker runs: the spec, less the suppressor once it has failed. */
  get openSpec(): LegSpec {
    return this.denoising || !denoises(this.spec) ? this.spec : { from: this.spec.from, to: this.spec.to };
  }

  push(data: Uint8Array): void {
    if (this.closed) return;
    samplesIn(this.spec.from.codec, data.length); // half a PCM16 sample throws here, as inline does
    if (data.length === 0) return;
    this.hadAudio = true;
    this.owner.submit(this, data);
  }

  marker(token: number): void {
    if (this.closed) return;
    this.markers.push(token);
    this.owner.control(this, K_MARKER, token);
  }

  reset(): void {
    if (this.closed) return;
    this.generation = (this.generation + 1) | 0;
    this.owner.control(this, K_RESET, 0);
    const had = this.hadAudio;
    this.hadAudio = false;
    this.sink.reset(had);
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
  readonly legs = new Set<WorkerLeg>();
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
  private readonly byId = new Map<number, WorkerLeg>();
  private nextId = 1;
  private flushScheduled = false;
  private closing = false;
  private dropped = 0;
  private replaced = 0;
  private readonly watchdog: NodeJS.Timeout;
  private readonly flushAll = (): void => this.flush();
  /** Ends the hold-up watch's probe of this pool. */
  private readonly unprobe: (() => void) | undefined;

  constructor(
    workers: number,
    private readonly log: Logger | undefined,
    private readonly metrics: Metrics | undefined,
    /** The noise suppressor's module each worker loads (undefined: the package; tests name a missing one). */
    private readonly suppressorModule: string | undefined,
    /**
     * Told when a worker took long to answer, and asked how long the oldest unanswered batch has been
     * waiting (a worker still stuck): the bridge was held up (src/held-up.ts).
     */
    private readonly heldUp?: Pick<HeldUp, 'late' | 'probe'>,
  ) {
    this.workers = workers;
    for (let i = 0; i < workers; i++) {
      const slot = new Slot(i);
      this.slots.push(slot);
      this.spawn(slot);
    }
    this.watchdog = setInterval(() => this.checkHung(), WATCHDOG_MS / 4);
    this.watchdog.unref();
    this.unprobe = heldUp?.probe((now) => this.waitingMs(now));
  }

  /** How long the oldest unanswered batch of any worker has been waiting at `now` (0: none waits). */
  private waitingMs(now: number): number {
    let most = 0;
    for (const slot of this.slots) if (slot.inFlight > 0) most = Math.max(most, now - slot.waitingSince);
    return most;
  }

  open(spec: LegSpec, sink: LegSink, options?: OpenOptions): Leg {
    if (this.closing) throw new Error('the DSP pipeline is closed');
    checkSpec(spec);
    if (sameFormat(spec.from, spec.to) && !denoises(spec))
      return new PassLeg(spec, sink, options?.log ?? this.log);
    let slot = this.slots[0]!;
    for (const s of this.slots) if (s.legs.size < slot.legs.size) slot = s;
    // Beside `near` (a call's other direction): a worker's loss then reaches half as many calls.
    const near = options?.near;
    if (near instanceof WorkerLeg && near.owner === this && !near.closed) slot = near.slot;
    const id = this.nextId++;
    if (this.nextId > 0x7fffffff) this.nextId = 1;
    const leg = new WorkerLeg(this, id, spec, sink, slot, options?.log);
    slot.legs.add(leg);
    this.byId.set(id, leg);
    if (!slot.staging.putOpen(id, spec)) this.dropped++;
    if (leg.denoising) this.metrics?.denoisedCalls.inc();
    this.schedule();
    return leg;
  }

  /** @internal */
  submit(leg: WorkerLeg, data: Uint8Array): void {
    if (!leg.slot.staging.put(leg.id, K_AUDIO, data, leg.generation)) {
      this.dropped++;
      this.metrics?.shedChunks.inc({ reason: 'dsp_backlog' });
      return;
    }
    if (!this.flushScheduled) this.schedule();
  }

  /** @internal A marker or reset: never refused for the staging bound. */
  control(leg: WorkerLeg, kind: number, value: number): void {
    leg.slot.staging.putInt(leg.id, kind, value);
    if (!this.flushScheduled) this.schedule();
  }

  /** @internal */
  remove(leg: WorkerLeg): void {
    leg.slot.legs.delete(leg);
    this.byId.delete(leg.id);
    leg.slot.staging.putInt(leg.id, K_CLOSE, 0);
    this.schedule();
  }

  workerOf(leg: Leg): number {
    return leg instanceof WorkerLeg ? leg.slot.index : -1;
  }

  injectWorkerFault(worker: number, fault: WorkerFault, ms = 0): void {
    const slot = this.slots[worker];
    if (slot === undefined) throw new RangeError(`no worker ${worker}; there are ${this.workers}`);
    const mode = {
      throw: FAULT_THROW,
      exit: FAULT_EXIT,
      hang: FAULT_HANG,
      slow: FAULT_SLOW,
      denoise: FAULT_DENOISE,
    }[fault];
    slot.staging.putInt(0, K_FAULT, mode, ms);
    this.schedule();
  }

  stats() {
    return {
      legs: this.byId.size,
      dropped: this.dropped,
      replaced: this.replaced,
      perWorker: this.slots.map((s) => s.legs.size),
    };
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.watchdog);
    this.unprobe?.();
    for (const slot of this.slots) clearTimeout(slot.respawnTimer);
    for (const leg of this.byId.values()) leg.closed = true;
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
    const worker = new Worker(entry, {
      eval: isEval,
      workerData: { control: slot.pages.control, suppressor: this.suppressorModule },
    });
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
    const now = performance.now();
    this.heldUp?.late(now, now - slot.waitingSince);
    slot.waitingSince = now;
    const replies = slot.pages.replies;
    const page = replies.open(message);
    this.replyU8 = replies.u8(page);
    this.replyI32 = replies.i32(page);
    this.replySlot = slot.index;
    this.metrics?.dspSeconds.inc(replies.header(page));
    forEachRecord(this.replyI32, batchEnd(this.replyI32), this.deliver);
    replies.release(page);
    if (!this.closing) this.send(slot);
  }

  /** The reply batch being delivered, for `deliver`. */
  private replyU8: Uint8Array = new Uint8Array(0);
  private replyI32: Int32Array = new Int32Array(0);
  /**
   * Audio for the sinks: each output record is copied here, as 32-bit words (records are 4-aligned),
   * and handed over as a view of its first `len` bytes, one view kept per length. A view of the reply
   * page itself would be a new object per chunk on the main thread (test/audio/no-allocation.test.ts).
   */
  private out32 = new Int32Array(2048);
  private outU8 = new Uint8Array(this.out32.buffer);
  private readonly outViews = new Map<number, Uint8Array>();

  /** The reply page's bytes [at, at + len) in the sinks' scratch, as a view valid during the call. */
  private outView(at: number, len: number): Uint8Array {
    const words = (len + 3) >> 2;
    if (this.out32.length < words) {
      this.out32 = new Int32Array(Math.max(words, this.out32.length * 2));
      this.outU8 = new Uint8Array(this.out32.buffer);
      this.outViews.clear();
    }
    const src = this.replyI32;
    const dst = this.out32;
    const from = at >> 2;
    for (let i = 0; i < words; i++) dst[i] = src[from + i]!;
    let view = this.outViews.get(len);
    if (view === undefined) {
      if (this.outViews.size >= 64) this.outViews.clear();
      view = this.outU8.subarray(0, len);
      this.outViews.set(len, view);
    }
    return view;
  }
  private replySlot = 0;

  /** One reply record to its leg's sink (bound once: no closure per batch or record). */
  private readonly deliver = (id: number, kind: number, gen: number, at: number, len: number): void => {
    const leg = this.byId.get(id);
    if (leg === undefined || leg.closed) return;
    try {
      if (kind === K_OUT) {
        // A view for the length of the call: sinks copy what they keep (src/pipeline/types.ts). Output of
        // audio pushed before a reset is dropped here.
        if (gen === leg.generation && len > 0) leg.sink.audio(this.outView(at, len));
      } else if (kind === K_MARKER) {
        leg.markers.shift();
        leg.sink.marker(this.replyI32[at >> 2]!);
      } else if (kind === K_ERROR) {
        const text = Buffer.from(this.replyU8.buffer, at, len).toString('utf8');
        (leg.log ?? this.log)?.warn({ worker: this.replySlot, message: text }, 'dsp chunk failed; skipped');
      } else if (kind === K_STEP_FAILED && leg.denoising) {
        leg.denoising = false;
        this.metrics?.denoiseFailures.inc();
        const reason = Buffer.from(this.replyU8.buffer, at, len).toString('utf8');
        (leg.log ?? this.log)?.warn(
          { step: 'denoise', reason, worker: this.replySlot },
          'noise suppressor failed; the call goes on without it',
        );
      }
    } catch (err) {
      // A throwing sink must not take the other legs of this batch (or the process) with it.
      (leg.log ?? this.log)?.error({ err }, 'pipeline sink threw');
    }
  };

  private onExit(slot: Slot, generation: number, code: number): void {
    if (this.closing || generation !== slot.generation) return;
    this.replaced++;
    slot.worker = null;
    slot.inFlight = 0;
    // The new worker's first batch re-opens every leg of the slot, then carries whatever was staged for
    // the dead one (records for it were never sent, so nothing is duplicated). Markers staged there will
    // come back from the new worker; the rest of each leg's markers were lost with the old one.
    const pending = slot.staging;
    const staged = new Map<number, number>();
    forEachRecord(pending.i32, pending.used, (id, kind) => {
      if (kind === K_MARKER) staged.set(id, (staged.get(id) ?? 0) + 1);
    });
    slot.pages = new Pages();
    slot.page = slot.pages.out.acquire()!;
    for (const leg of slot.legs) slot.staging.putOpen(leg.id, leg.openSpec);
    if (!slot.staging.append(pending)) this.dropped += pending.records;
    const delayMs =
      slot.failures === 0 ? 0 : Math.min(RESPAWN_MAX_MS, RESPAWN_BASE_MS * 2 ** (slot.failures - 1));
    slot.failures++;
    this.log?.error(
      { worker: slot.index, exitCode: code, legs: slot.legs.size, respawnDelayMs: delayMs },
      'dsp worker died; replaced, its legs go on with fresh DSP state',
    );
    this.metrics?.dspGaps.inc(slot.legs.size);
    const reason = `dsp worker ${slot.index} died (exit code ${code}); audio in flight was lost`;
    for (const leg of slot.legs) {
      const lost = leg.markers.splice(0, leg.markers.length - (staged.get(leg.id) ?? 0));
      try {
        leg.sink.gap(reason);
        for (const token of lost) leg.sink.marker(token);
      } catch (err) {
        (leg.log ?? this.log)?.error({ err }, 'pipeline sink threw in gap');
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
