/**
 * The audio pipeline: one-way legs between the media sockets and the DSP core.
 *
 *   pipeline.open({ from, to, steps }, sink) -> leg
 *   leg.push(audio)     audio in `from` (codec and rate), a whole number of samples
 *   leg.marker(token)   comes out of the sink after every chunk pushed before it
 *   leg.reset()         audio pushed before it never comes out after it (barge-in)
 *   leg.close()
 *
 * A leg decodes `from.codec`, resamples `from.rate -> to.rate` and encodes `to.codec`; a leg whose `from`
 * equals its `to` and has no steps does no DSP at all (the sink gets the pushed bytes). `steps: ['denoise']`
 * puts the noise suppressor between the decode and the encode (src/audio/denoise.ts: up to its 48 kHz and
 * down to `to.rate`); one that fails or never loaded is left out, and the leg goes on as a plain one. The DSP runs in worker threads or
 * inline (0 workers). Audio and markers share one first-in-first-out stream per leg, so ordering travels
 * with the audio: nothing has to count chunks or wait on a timer to keep an event behind its audio.
 * Re-chunking to `chunk_bytes` and real-time pacing happen after the leg, next to the socket.
 */
import type { Codec } from '../audio/format.js';
import type { Logger } from '../log.js';

/** One end of a leg: a codec at a rate the resampler supports (8000 ... 48000). */
export interface Format {
  readonly codec: Codec;
  readonly rate: number;
}

/** A step of a leg's DSP besides the codecs and the resampler. */
export type LegStep = 'denoise';

export interface LegSpec {
  readonly from: Format;
  readonly to: Format;
  /** Steps between the decode and the encode; none by default. */
  readonly steps?: readonly LegStep[] | undefined;
}

/** Whether a spec has the suppressor step. */
export function denoises(spec: LegSpec): boolean {
  return spec.steps?.includes('denoise') === true;
}

/**
 * Where a leg's output goes. One object per leg, not one closure per chunk.
 *
 * The bytes handed to `audio` are a view into a buffer the pipeline reuses as soon as the call returns: a
 * sink copies what it keeps (the outbound re-chunker, the echo bot's ring and the ws bot's masked frame all
 * do). That is what lets a chunk cross without an allocation.
 */
export interface LegSink {
  /** Audio in the leg's `to` format, any whole number of samples; valid during the call only. */
  audio(view: Uint8Array): void;
  /** A marker pushed with `leg.marker(token)`, after all the audio pushed before it. */
  marker(token: number): void;
  /**
   * The leg was reset: called inside `leg.reset()`, before it returns. `hadAudio` says whether any audio
   * was pushed since the last reset (so the far end may hold some of it).
   */
  reset(hadAudio: boolean): void;
  /** The leg's DSP state was lost (its worker died and was replaced): audio goes on, markers are kept. */
  gap(reason: string): void;
}

export interface Leg {
  readonly spec: LegSpec;
  /**
   * Whether the noise suppressor is running on this leg: false for a leg without the step, and from
   * the moment the pipeline learns that its suppressor failed (a worker's answer may come a batch later).
   */
  readonly denoising: boolean;
  /** Audio in `from`, a whole number of samples (else `odd_length`, thrown here); not kept after the call. */
  push(audio: Uint8Array): void;
  /** `token` comes out of the sink after the audio pushed before it. Markers are never shed. */
  marker(token: number): void;
  /**
   * Drops the audio pushed before this call that has not come out yet, and the DSP state it left; the
   * sink's `reset` is called before this returns. Markers pushed before it still come out, in order.
   */
  reset(): void;
  /** Frees the leg's DSP state; no sink calls after this. */
  close(): void;
}

export interface OpenOptions {
  /** A leg to share a worker with (a call's other direction), so that losing a worker touches fewer calls. */
  readonly near?: Leg | undefined;
  /** The session's logger: the pipeline's own log lines about this leg carry its `session_id`. */
  readonly log?: Logger | undefined;
}

export interface AudioPipeline {
  readonly workers: number;
  open(spec: LegSpec, sink: LegSink, options?: OpenOptions): Leg;
  /** Stops the workers. */
  close(): Promise<void>;
}

export function sameFormat(a: Format, b: Format): boolean {
  return a.codec === b.codec && a.rate === b.rate;
}

/**
 * How a fault test troubles a worker: `throw` raises an uncaught error in it, `exit` calls process.exit in
 * it, `hang` spins it forever (the watchdog then terminates it after ~2 s of silence), `slow` makes it
 * take `ms` longer over every batch from then on (it stays alive: ordering must not depend on timing),
 * `denoise` makes every noise suppressor in it throw at its next frame (the legs go on without one).
 */
export type WorkerFault = 'throw' | 'exit' | 'hang' | 'slow' | 'denoise';

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
