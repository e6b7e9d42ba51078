/**
 * `workers: 0`: the DSP runs synchronously on the calling thread; the sink is called before
 * `fromCaller`/`fromBot` returns. For development, tests, and machines where a hop costs more than the
 * work (see bench/README.md).
 */
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { SessionDsp } from './dsp.js';
import { checkSpec } from './spec.js';
import type { DspPipeline, PipelineSession, PipelineSessionSpec, PipelineSink } from './types.js';

/** DSP seconds are summed here and added to the Prometheus counter every this many chunks. */
const METRIC_EVERY_CHUNKS = 512;

class InlineSession implements PipelineSession {
  private closed = false;

  constructor(
    private readonly owner: InlinePipeline,
    private readonly dsp: SessionDsp,
    private readonly sink: PipelineSink,
  ) {}

  fromCaller(data: Uint8Array): void {
    if (!this.closed) this.run(data, true);
  }

  fromBot(data: Uint8Array): void {
    if (!this.closed) this.run(data, false);
  }

  /** One chunk through the DSP into the owner's scratch, then to the sink, either direction. */
  private run(data: Uint8Array, fromCaller: boolean): void {
    const t0 = performance.now();
    const { owner, dsp, sink } = this;
    const bytes = fromCaller ? dsp.botBytesFor(data.byteLength) : dsp.callerBytesFor(data.byteLength);
    const out = owner.output(bytes);
    try {
      const n = fromCaller ? dsp.callerToBot(data, out, 0) : dsp.botToCaller(data, out, 0);
      owner.account(performance.now() - t0);
      try {
        if (fromCaller) sink.toBot(out.subarray(0, n));
        else sink.toCaller(out.subarray(0, n));
      } catch (err) {
        owner.sinkThrew(err);
      }
    } finally {
      owner.done(out);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dsp.free();
    this.owner.sessions--;
  }
}

export class InlinePipeline implements DspPipeline {
  readonly workers = 0;
  sessions = 0;
  private dspMs = 0;
  private closed = false;
  private chunks = 0;
  /**
   * Output scratch, reused chunk after chunk (sinks copy what they keep). A sink that feeds the
   * pipeline again from inside its call (a bot that answers at once) finds it taken and gets a buffer
   * of its own.
   */
  private scratch = new Uint8Array(8192);
  private scratchBusy = false;

  constructor(
    private readonly log: Logger | undefined,
    private readonly metrics: Metrics | undefined,
  ) {}

  open(spec: PipelineSessionSpec, sink: PipelineSink): PipelineSession {
    if (this.closed) throw new Error('the DSP pipeline is closed');
    checkSpec(spec);
    const session = new InlineSession(this, new SessionDsp(spec), sink);
    this.sessions++;
    return session;
  }

  /** @internal Room for `bytes` of output. */
  output(bytes: number): Uint8Array {
    if (this.scratchBusy) return new Uint8Array(bytes);
    if (this.scratch.byteLength < bytes) this.scratch = new Uint8Array(bytes);
    this.scratchBusy = true;
    return this.scratch;
  }

  /** @internal The sink has returned: `out` may be reused. */
  done(out: Uint8Array): void {
    if (out === this.scratch) this.scratchBusy = false;
  }

  /** @internal */
  account(ms: number): void {
    this.dspMs += ms;
    if (++this.chunks >= METRIC_EVERY_CHUNKS) this.flushMetrics();
  }

  /**
   * @internal A throwing sink is logged, as in worker mode, rather than thrown back into the socket
   * handler that submitted the audio (which would blame the input for the sink's fault).
   */
  sinkThrew(err: unknown): void {
    this.log?.error({ err }, 'pipeline sink threw');
  }

  workerOf(_session: PipelineSession): number {
    return -1;
  }

  injectWorkerFault(): void {
    throw new Error('an inline pipeline has no workers to fault');
  }

  stats() {
    return { sessions: this.sessions, dropped: 0, replaced: 0, perWorker: [] };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.flushMetrics();
    this.log?.debug({ sessions: this.sessions }, 'inline dsp pipeline closed');
  }

  private flushMetrics(): void {
    this.metrics?.dspSeconds.inc(this.dspMs / 1000);
    this.dspMs = 0;
    this.chunks = 0;
  }
}
