/**
 * The audio pipeline factory: `createPipeline({ workers })` with `workers` from config `dspWorkers`
 * (DSP_WORKERS). 0 runs the DSP inline on the calling thread; N > 0 runs it in N worker threads.
 */
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { InlinePipeline } from './inline.js';
import { WorkerPipeline } from './pool.js';
import type { AudioPipeline, PipelineSession } from './types.js';

export { checkSpec } from './spec.js';

export type * from './types.js';

/**
 * How a fault test kills a worker: `throw` raises an uncaught error in it, `exit` calls process.exit in
 * it, `hang` spins it forever (the watchdog then terminates it after ~2 s of silence).
 */
export type WorkerFault = 'throw' | 'exit' | 'hang';

export interface PipelineStats {
  readonly sessions: number;
  /** Chunks dropped because a worker's staging buffer was full. */
  readonly dropped: number;
  /** Workers replaced after dying. */
  readonly replaced: number;
  /** Sessions per worker. */
  readonly perWorker: readonly number[];
}

export interface DspPipeline extends AudioPipeline {
  /** The worker a session runs on, or -1 inline. */
  workerOf(session: PipelineSession): number;
  /**
   * For fault tests: makes worker `worker` die in the way `fault` names after it has processed what was
   * submitted before this call. Its sessions are then re-opened on a replacement (each sink gets onGap).
   */
  injectWorkerFault(worker: number, fault: WorkerFault): void;
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
