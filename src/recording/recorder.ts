/**
 * One call's recording: the two legs aligned (align.ts) into a stereo WAV written as the call goes
 * (wav-file.ts), its sidecar written at the start and at the end (store.ts). A disk that fails stops the
 * recording with one logged error and a metric; the call never waits on the disk and never sees it.
 */
import { performance } from 'node:perf_hooks';
import type { Counter } from 'prom-client';
import type { Logger } from '../log.js';
import { StereoAligner } from './align.js';
import type { RecordingMeta, RecordingStore } from './store.js';
import { HEADER_BYTES, nodeWavFs, StereoWavFile, type WavFailure, type WavFs } from './wav-file.js';

export interface RecorderDeps {
  readonly store: RecordingStore;
  readonly log: Logger;
  /** Recordings that stopped early, by the system's error code. */
  readonly failures: Counter<'code'>;
  /** Told once the recording is final on disk (or failed). */
  readonly onStopped?: (recordingId: string) => void;
  readonly fs?: WavFs;
  /** Milliseconds on a monotonic clock; performance.now() by default. */
  readonly now?: () => number;
}

export interface RecorderStart {
  readonly recording_id: string;
  readonly session_id: string;
  readonly tenant: string;
  readonly started_at: string;
  /** The caller's rate: both legs arrive at it. */
  readonly rate: number;
}

/**
 * How far behind the clock a leg's end may lie and still be heard as continuous: the caller's provider
 * streams without pause (silence included), so half a second of stall is still its audio arriving late;
 * a bot falls quiet between turns, so its audio after 200 ms without any starts where the clock says.
 */
const CALLER_TOLERANCE_MS = 500;
const BOT_TOLERANCE_MS = 200;
/** Audio a leg may hold waiting for the other: 2 s (64 KB at 16 kHz). */
const LEG_CAPACITY_MS = 2000;

export class CallRecorder {
  readonly meta: Omit<RecordingMeta, 'duration_ms' | 'bytes' | 'in_progress'>;
  readonly #deps: RecorderDeps;
  readonly #file: StereoWavFile;
  readonly #aligner: StereoAligner;
  readonly #now: () => number;
  readonly #t0: number;
  readonly #rate: number;
  #stopped: Promise<RecordingMeta> | undefined;

  constructor(start: RecorderStart, deps: RecorderDeps) {
    const { store, log } = deps;
    this.#deps = deps;
    this.#rate = start.rate;
    this.meta = {
      recording_id: start.recording_id,
      session_id: start.session_id,
      tenant: start.tenant,
      started_at: start.started_at,
      sample_rate: start.rate,
      channels: 2,
    };
    this.#now = deps.now ?? (() => performance.now());
    this.#t0 = this.#now();
    const fs = deps.fs ?? nodeWavFs;
    this.#file = new StereoWavFile(
      {
        path: store.wavPath(start.tenant, start.recording_id),
        rate: start.rate,
        fs: {
          // The folder on demand, the sidecar once the file exists: a listing never shows a sidecar
          // whose file could not be created.
          open: async (path) => {
            await store.prepare(start.tenant);
            const h = await fs.open(path);
            try {
              await store.writeMeta(this.view(true));
            } catch (err) {
              await h.close().catch(() => {});
              throw err;
            }
            return h;
          },
        },
      },
      (f) => this.#failed(f),
    );
    const ms = (v: number) => Math.round((v * start.rate) / 1000);
    this.#aligner = new StereoAligner(
      {
        capacityFrames: ms(LEG_CAPACITY_MS),
        toleranceFrames: [ms(CALLER_TOLERANCE_MS), ms(BOT_TOLERANCE_MS)],
      },
      (frames) => this.#file.write(frames),
    );
    log.info({ recording_id: start.recording_id }, 'recording started');
  }

  /** The caller's audio, PCM16 at the caller's rate; not kept after the call. */
  caller(pcm: Int16Array): void {
    if (this.#stopped === undefined && this.#file.failed === undefined)
      this.#aligner.push(0, pcm, this.#clock());
  }

  /** The bot's audio as the caller hears it, PCM16 at the caller's rate; not kept after the call. */
  bot(pcm: Int16Array): void {
    if (this.#stopped === undefined && this.#file.failed === undefined)
      this.#aligner.push(1, pcm, this.#clock());
  }

  /** The call has ended (the session's taps say so): the recording is finished. */
  end(): void {
    void this.stop();
  }

  /** The metadata as it stands (while in progress: what has been written so far). */
  view(inProgress: boolean): RecordingMeta {
    const frames = inProgress ? this.#file.frames : this.#file.dataBytes / 4;
    const failed = this.#file.failed;
    return {
      ...this.meta,
      duration_ms: Math.round((frames * 1000) / this.#rate),
      bytes: HEADER_BYTES + frames * 4,
      in_progress: inProgress,
      ...(failed === undefined ? {} : { failed: failed.code }),
    };
  }

  /** Ends the recording: the rest written, the header patched, the sidecar final. Idempotent. */
  stop(): Promise<RecordingMeta> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop(): Promise<RecordingMeta> {
    if (this.#file.failed === undefined) this.#aligner.finish();
    await this.#file.close();
    let meta = this.view(false);
    try {
      await this.#deps.store.writeMeta(meta);
    } catch (err) {
      // The disk already failed (and said so once), or fails now: the first failure is the one logged.
      if (this.#file.failed === undefined) {
        const f = toFailure(err);
        this.#failed(f);
        meta = { ...meta, failed: f.code };
      }
    }
    this.#deps.onStopped?.(meta.recording_id);
    this.#deps.log.info(
      { recording_id: meta.recording_id, duration_ms: meta.duration_ms, bytes: meta.bytes },
      'recording ended',
    );
    return meta;
  }

  #clock(): number {
    return Math.round(((this.#now() - this.#t0) * this.#rate) / 1000);
  }

  #logged = false;
  #failed(f: WavFailure): void {
    if (this.#logged) return;
    this.#logged = true;
    this.#deps.failures.labels(f.code).inc();
    this.#deps.log.error(
      { recording_id: this.meta.recording_id, code: f.code, reason: f.message },
      'recording stopped: the disk refused it (the call goes on)',
    );
  }
}

function toFailure(err: unknown): WavFailure {
  const e = err as { code?: unknown; message?: unknown };
  return {
    code: typeof e.code === 'string' ? e.code : 'EIO',
    message: typeof e.message === 'string' ? e.message : String(err),
  };
}
