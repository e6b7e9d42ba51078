/**
 * `workers: 0`: the DSP runs synchronously on the calling thread; the sink is called before `push`
 * returns, so audio and markers come out in the order they went in with nothing to keep. The default on
 * machines of two cores or fewer (but for DENOISE=true on two), where a worker is a third busy thread
 * (see bench/README.md).
 */
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { LegDsp } from './dsp.js';
import { PassLeg } from './pass.js';
import { checkSpec } from './spec.js';
import type { Suppressor } from './suppressor.js';
import {
  type DspPipeline,
  denoises,
  type Leg,
  type LegSink,
  type LegSpec,
  type OpenOptions,
  sameFormat,
} from './types.js';

/**
 * One chunk in this many is timed for `voicebridge_dsp_seconds_total` (its time counted this many times
 * over): an estimate, from the same code on the same chunks, for a quarter of a clock read a chunk.
 */
const TIME_EVERY_CHUNKS = 8;
/** DSP seconds are summed here and added to the Prometheus counter every this many timed chunks. */
const METRIC_EVERY_TIMED = 64;

class InlineLeg implements Leg {
  #closed = false;
  #hadAudio = false;
  /** Chunks since this leg's last timed one (per leg: a call's two legs alternate). */
  #sinceTimed = 0;
  /** The suppressor runs here: each chunk checks whether it failed. */
  #denoising: boolean;

  constructor(
    readonly spec: LegSpec,
    private readonly owner: InlinePipeline,
    private readonly dsp: LegDsp,
    private readonly sink: LegSink,
    private readonly log: Logger | undefined,
  ) {
    this.#denoising = dsp.denoising;
    if (denoises(spec)) owner.denoiseOpened(this, dsp.takeFailure());
  }

  get denoising(): boolean {
    return this.#denoising;
  }

  push(data: Uint8Array): void {
    if (this.#closed) return;
    const { owner, dsp } = this;
    if (dsp.direct) {
      // PCM16 both ends: the resampler's own output goes to the sink, no copy in between.
      const timed = this.#timed();
      const t0 = timed ? performance.now() : 0;
      const view = dsp.runView(data);
      if (timed) owner.account(performance.now() - t0);
      if (view.length > 0) this.#deliver(view);
      return;
    }
    const out = owner.output(dsp.bytesFor(data.length));
    try {
      // Two clock reads a chunk cost about what the DSP's bookkeeping does: only a sample is timed.
      const timed = this.#timed();
      const t0 = timed ? performance.now() : 0;
      const n = dsp.run(data, out, 0);
      if (timed) owner.account(performance.now() - t0);
      if (this.#denoising && !dsp.denoising) this.#lostSuppressor();
      if (n > 0) this.#deliver(owner.view(out, n));
    } finally {
      owner.done(out);
    }
  }

  #lostSuppressor(): void {
    this.#denoising = false;
    this.owner.denoiseFailed(this.log, this.dsp.takeFailure() ?? 'the noise suppressor failed');
  }

  /** Whether this chunk's DSP is timed: one in TIME_EVERY_CHUNKS of this leg's. */
  #timed(): boolean {
    if (++this.#sinceTimed < TIME_EVERY_CHUNKS) return false;
    this.#sinceTimed = 0;
    return true;
  }

  get logger(): Logger | undefined {
    return this.log;
  }

  #deliver(view: Uint8Array): void {
    this.#hadAudio = true;
    try {
      this.sink.audio(view);
    } catch (err) {
      // Logged, as in worker mode, rather than thrown back into the socket handler that pushed the
      // audio (which would blame the input for the sink's fault).
      (this.log ?? this.owner.log)?.error({ err }, 'pipeline sink threw');
    }
  }

  marker(token: number): void {
    if (!this.#closed) this.sink.marker(token);
  }

  reset(): void {
    if (this.#closed) return;
    this.dsp.reset();
    if (this.#denoising && !this.dsp.denoising) this.#lostSuppressor();
    const had = this.#hadAudio;
    this.#hadAudio = false;
    this.sink.reset(had);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.dsp.free();
    this.owner.legs--;
  }
}

export class InlinePipeline implements DspPipeline {
  readonly workers = 0;
  legs = 0;
  #dspMs = 0;
  #closed = false;
  #chunks = 0;
  /**
   * Output scratch, reused chunk after chunk (sinks copy what they keep). A sink that feeds a leg again
   * from inside its call (a bot that answers at once) finds it taken and gets a buffer of its own.
   */
  #scratch = new Uint8Array(8192);
  #scratchBusy = false;
  /** Views of the scratch's first `n` bytes, by `n` (a handful of chunk sizes): none made per chunk. */
  #views = new Map<number, Uint8Array>();
  /** The view last handed out, and its length: the same chunk size over and over needs no lookup. */
  #lastView: Uint8Array = new Uint8Array(0);

  constructor(
    readonly log: Logger | undefined,
    private readonly metrics: Metrics | undefined,
    /** The noise suppressor for legs with the denoise step (loaded by the caller: loadSuppressor). */
    private readonly suppressor: Suppressor | undefined,
  ) {}

  open(spec: LegSpec, sink: LegSink, options?: OpenOptions): Leg {
    if (this.#closed) throw new Error('the DSP pipeline is closed');
    checkSpec(spec);
    if (sameFormat(spec.from, spec.to) && !denoises(spec))
      return new PassLeg(spec, sink, options?.log ?? this.log);
    this.legs++;
    return new InlineLeg(spec, this, new LegDsp(spec, this.suppressor), sink, options?.log);
  }

  /** @internal A leg with the denoise step opened; `failure`: why its suppressor did not start. */
  denoiseOpened(leg: InlineLeg, failure: string | undefined): void {
    this.metrics?.denoisedCalls.inc();
    if (failure !== undefined) this.denoiseFailed(leg.logger, failure);
  }

  /** @internal A leg's suppressor failed or never started: said once per leg (its caller sees to that). */
  denoiseFailed(log: Logger | undefined, failure: string): void {
    this.metrics?.denoiseFailures.inc();
    (log ?? this.log)?.warn(
      { step: 'denoise', reason: failure },
      'noise suppressor failed; the call goes on without it',
    );
  }

  /** @internal Room for `bytes` of output. */
  output(bytes: number): Uint8Array {
    if (this.#scratchBusy) return new Uint8Array(bytes);
    if (this.#scratch.length < bytes) {
      this.#scratch = new Uint8Array(bytes);
      this.#views.clear();
      this.#lastView = new Uint8Array(0);
    }
    this.#scratchBusy = true;
    return this.#scratch;
  }

  /** @internal The first `n` bytes of `out`. */
  view(out: Uint8Array, n: number): Uint8Array {
    if (out !== this.#scratch) return out.subarray(0, n);
    if (this.#lastView.length === n) return this.#lastView;
    let v = this.#views.get(n);
    if (v === undefined) {
      if (this.#views.size >= 64) this.#views.clear();
      v = out.subarray(0, n);
      this.#views.set(n, v);
    }
    this.#lastView = v;
    return v;
  }

  /** @internal The sink has returned: `out` may be reused. */
  done(out: Uint8Array): void {
    if (out === this.#scratch) this.#scratchBusy = false;
  }

  /** @internal A timed chunk's DSP took `ms`. */
  account(ms: number): void {
    this.#dspMs += ms * TIME_EVERY_CHUNKS;
    if (++this.#chunks >= METRIC_EVERY_TIMED) this.#flushMetrics();
  }

  workerOf(_leg: Leg): number {
    return -1;
  }

  injectWorkerFault(): void {
    throw new Error('an inline pipeline has no workers to fault');
  }

  stats() {
    return { legs: this.legs, dropped: 0, replaced: 0, perWorker: [] };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#flushMetrics();
    this.log?.debug({ legs: this.legs }, 'inline dsp pipeline closed');
  }

  #flushMetrics(): void {
    this.metrics?.dspSeconds.inc(this.#dspMs / 1000);
    this.#dspMs = 0;
    this.#chunks = 0;
  }
}
