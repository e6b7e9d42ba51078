/**
 * The recordings of one bridge instance: which calls are recorded (RECORD_CALLS, or the tenant's
 * `"recording": true`), the recorders of the calls in progress here, the files under RECORDINGS_DIR, and
 * retention (files older than RECORDINGS_RETENTION_DAYS removed at start and every hour).
 */
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { CallRecorder, type RecorderStart } from './recorder.js';
import { newRecordingId, type RecordingMeta, RecordingStore } from './store.js';
import type { WavFs } from './wav-file.js';

export type { CallRecorder } from './recorder.js';
export type { RecordingMeta } from './store.js';

export interface RecordingsOptions {
  readonly dir: string;
  /** Every call is recorded (RECORD_CALLS). */
  readonly recordAll: boolean;
  /** 0 keeps recordings forever. */
  readonly retentionDays: number;
  readonly log: Logger;
  readonly registry: Registry;
  /** A file system seam for tests (a failing disk). */
  readonly fs?: WavFs;
}

const DAY_MS = 86_400_000;
const SWEEP_EVERY_MS = 3_600_000;
/**
 * A recording in progress whose file has not grown for this long was left by an instance that stopped
 * (a call in progress writes a block at least every second or two while its caller's audio flows).
 */
const INTERRUPTED_AFTER_MS = 10 * 60_000;

export class Recordings {
  readonly store: RecordingStore;
  readonly #o: RecordingsOptions;
  readonly #live = new Map<string, CallRecorder>();
  readonly #failures: Counter<'code'>;
  readonly #started: Counter;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> = Promise.resolve();

  constructor(options: RecordingsOptions) {
    this.#o = options;
    this.store = new RecordingStore(options.dir);
    this.#started = new Counter({
      name: 'voicebridge_recordings_total',
      help: 'Call recordings started',
      registers: [options.registry],
    });
    this.#failures = new Counter({
      name: 'voicebridge_recording_failures_total',
      help: 'Recordings stopped early because the disk refused them (ENOSPC, EIO, ...); the calls went on',
      labelNames: ['code'] as const,
      registers: [options.registry],
    });
  }

  /** Whether a call of a tenant with this `recording` setting is recorded. */
  wanted(tenantSetting: boolean | undefined): boolean {
    return this.#o.recordAll || tenantSetting === true;
  }

  /** Starts recording a call; the recorder is told the audio and stopped when the call ends. */
  start(call: Omit<RecorderStart, 'recording_id'>, log: Logger): CallRecorder {
    const rec = new CallRecorder(
      { ...call, recording_id: newRecordingId() },
      {
        store: this.store,
        log,
        failures: this.#failures,
        onStopped: (id) => this.#live.delete(id),
        ...(this.#o.fs === undefined ? {} : { fs: this.#o.fs }),
      },
    );
    this.#started.inc();
    this.#live.set(rec.meta.recording_id, rec);
    return rec;
  }

  /** The tenant's recordings, newest first; a recording in progress here shows what is written so far. */
  async list(tenant: string, sessionId?: string): Promise<RecordingMeta[]> {
    return (await this.store.list(tenant, sessionId)).map((m) => this.#current(m));
  }

  async get(tenant: string, id: string): Promise<RecordingMeta | undefined> {
    const m = await this.store.get(tenant, id);
    return m === undefined ? undefined : this.#current(m);
  }

  /**
   * Now and every hour after: finishes recordings left in progress by a stopped instance, and removes
   * those past the retention period.
   */
  startRetention(): void {
    if (this.#timer !== undefined) return;
    const log = this.#o.log;
    const days = this.#o.retentionDays;
    const sweep = async () => {
      const repaired = await this.store.repair(INTERRUPTED_AFTER_MS, new Set(this.#live.keys()));
      if (repaired > 0)
        log.warn({ repaired }, 'recordings left unfinished by a stopped instance were closed');
      const removed = days === 0 ? 0 : await this.store.sweep(days * DAY_MS);
      if (removed > 0) log.info({ removed, days }, 'old recordings removed');
    };
    const run = () => {
      this.#sweeping = sweep().catch((err: unknown) =>
        log.warn({ code: (err as { code?: string }).code }, 'recording retention sweep failed'),
      );
    };
    run();
    this.#timer = setInterval(run, SWEEP_EVERY_MS).unref();
  }

  /** The sweep running or last run (tests wait on it). */
  get sweeping(): Promise<void> {
    return this.#sweeping;
  }

  /** Stops the timer and finishes the recordings still open. */
  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sweeping;
    await Promise.all([...this.#live.values()].map((r) => r.stop()));
  }

  #current(m: RecordingMeta): RecordingMeta {
    const live = m.in_progress ? this.#live.get(m.recording_id) : undefined;
    return live === undefined ? m : live.view(true);
  }
}
