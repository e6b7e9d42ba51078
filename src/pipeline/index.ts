/**
 * The audio pipeline factory: `createPipeline({ workers })` with `workers` from config `dspWorkers`
 * (DSP_WORKERS). 0 runs the DSP inline on the calling thread; N > 0 runs it in N worker threads. The
 * noise suppressor is loaded by the thread that runs the DSP: for inline, the caller loads it first.
 */
import type { HeldUp } from '../held-up.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { InlinePipeline } from './inline.js';
import { WorkerPipeline } from './pool.js';
import type { Suppressor } from './suppressor.js';
import type { DspPipeline } from './types.js';

export { checkSpec } from './spec.js';
export { loadSuppressor, type Suppressor } from './suppressor.js';

export type * from './types.js';

export interface PipelineOptions {
  /** Worker threads; 0 runs inline. */
  readonly workers: number;
  readonly log?: Logger;
  readonly metrics?: Metrics;
  /** Told when a worker is slow to answer (the bridge held up): see src/held-up.ts. */
  readonly heldUp?: Pick<HeldUp, 'late' | 'probe'>;
  /**
   * Inline: the noise suppressor for legs with the denoise step, loaded with `await loadSuppressor()`
   * (none: such legs run without it, and say so). Workers load their own.
   */
  readonly suppressor?: Suppressor;
  /** Workers: the suppressor's module to load instead of the package (tests name a missing one). */
  readonly suppressorModule?: string;
}

export function createPipeline(options: PipelineOptions): DspPipeline {
  const { workers } = options;
  if (!Number.isInteger(workers) || workers < 0) {
    throw new RangeError(`workers must be a whole number >= 0, got ${workers}`);
  }
  return workers === 0
    ? new InlinePipeline(options.log, options.metrics, options.suppressor)
    : new WorkerPipeline(workers, options.log, options.metrics, options.suppressorModule, options.heldUp);
}
