/**
 * The audio pipeline factory: `createPipeline({ workers })` with `workers` from config `dspWorkers`
 * (DSP_WORKERS). 0 runs the DSP inline on the calling thread; N > 0 runs it in N worker threads.
 */
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { InlinePipeline } from './inline.js';
import { WorkerPipeline } from './pool.js';
import type { AudioPipeline, Leg } from './types.js';

export { checkSpec } from './spec.js';

export type * from './types.js';

/**
 * How a fault test troubles a worker: `throw` raises an uncaught error in it, `exit` calls process.exit in
 * it, `hang` spins it forever (the watchdog then terminates it after ~2 s of silence), `slow` makes it
 * take `ms` longer over every batch from then on (it stays alive: ordering must not depend on timing).
 */
export type WorkerFault = 'throw' | 'exit' | 'hang' | 'slow';

export interface PipelineStats {
  /** Legs open with DSP state (pass-through legs have none). */
  readonly legs: number;
  /** Chunks dropped because a worker's staging buffer was full. */
  readonly dropped: number;
  /** Workers replaced after dying. */
  readonly replaced: number;
  /** Legs per worker. */
  readonly perWorker: readonly number[];
}

export interface DspPipeline extends AudioPipeline {
  /** The worker a leg runs on, or -1 inline (and for a pass-through leg). */
  workerOf(leg: Leg): number;
  /**
   * For fault tests: troubles worker `worker` in the way `fault` names, after it has processed what was
   * submitted before this call (`ms`: the delay per batch of `slow`). A worker that dies has its legs
   * re-opened on a replacement (each sink gets `gap`, and every marker lost with it).
   */
  injectWorkerFault(worker: number, fault: WorkerFault, ms?: number): void;
  stats(): PipelineStats;
}

export interface PipelineOptions {
  /** Worker threads; 0 runs inline. */
  readonly workers: number;
  readonly log?: Logger;
  readonly metrics?: Metrics;
}

export function createPipeline(options: PipelineOptions): DspPipeline {
  const { workers } = options;
  if (!Number.isInteger(workers) || workers < 0) {
    throw new RangeError(`workers must be a whole number >= 0, got ${workers}`);
  }
  return workers === 0
    ? new InlinePipeline(options.log, options.metrics)
    : new WorkerPipeline(workers, options.log, options.metrics);
}
