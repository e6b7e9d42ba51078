/**
 * The audio pipeline between the media sockets and the DSP core. Each session has two directions:
 *
 *   caller -> bot:  provider codec bytes at the caller's rate -> decode -> resample -> PCM16 LE at bot rate
 *   bot -> caller:  PCM16 LE at bot rate -> resample -> encode -> provider codec bytes at the output rate
 *
 * The DSP runs in worker threads (or inline with 0 workers). Per session and direction, chunks come out
 * in the order they went in. Re-chunking to `chunk_bytes` and real-time pacing happen after the
 * pipeline, on the main thread, next to the socket.
 */
import type { Codec } from '../audio/format.js';

export interface PipelineSessionSpec {
  /** What the provider sends: codec and `input_sample_rate`. */
  readonly callerIn: { readonly codec: Codec; readonly sampleRate: number };
  /** What the provider receives: codec and `output_sample_rate`. */
  readonly callerOut: { readonly codec: Codec; readonly sampleRate: number };
  /** The bot's rate; the bot leg is always PCM16 LE mono. */
  readonly botRate: number;
}

/**
 * Where a session's processed audio goes. One object per session, not one closure per chunk.
 *
 * The bytes handed to `toBot` and `toCaller` are a view into a buffer the pipeline reuses as soon as the
 * call returns: a sink copies what it keeps (the outbound re-chunker, the echo bot's ring and the ws
 * bot's masked frame all do). That is what lets a chunk cross without an allocation.
 */
export interface PipelineSink {
  /** PCM16 LE at the bot's rate; valid during the call only. */
  toBot(pcm: Uint8Array): void;
  /** Encoded audio in the `callerOut` format, any length; valid during the call only. */
  toCaller(encoded: Uint8Array): void;
  /** The session's DSP state was lost (its worker died and was replaced); audio goes on. */
  onGap?(reason: string): void;
}

export interface PipelineSession {
  /** Provider audio in the `callerIn` codec, a whole number of samples; not kept after the call returns. */
  fromCaller(data: Uint8Array): void;
  /** Bot audio, PCM16 LE at the bot rate, a whole number of samples; not kept after the call returns. */
  fromBot(data: Uint8Array): void;
  /** Frees the session's DSP state; no more sink calls after this. */
  close(): void;
}

export interface AudioPipeline {
  readonly workers: number;
  /**
   * `near`: a session to share a worker with (a call's other direction), so that losing a worker
   * touches that worker's calls only, not one direction of twice as many calls.
   */
  open(spec: PipelineSessionSpec, sink: PipelineSink, near?: PipelineSession): PipelineSession;
  /** Stops the workers. */
  close(): Promise<void>;
}

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
