/**
 * A synthetic caller: one call placed by an emulated provider in any dialect (src/emulator/dialects/).
 * It streams pre-rendered audio through the shared paced caller (paced-caller.ts: chunk k leaves at
 * t0 + k·chunk, so lateness never accumulates), presses DTMF keys on schedule, and reports what the
 * provider recorded: what the caller heard at its playout time, marks and clears, the platform's rules
 * the bridge broke, and the arrival times of the bridge's audio. Used by the emulator, `npm run call` and the tests.
 */
import type { Codec, Encoding } from '../audio/format.js';
import {
  type AckedMark,
  type Breach,
  createProviderLeg,
  type DialectName,
  type LegAuth,
  type ProviderLeg,
  type TimelineEntry,
} from './dialects/index.js';
import { isRootDialect, ROOT_DIALECT_NAME } from './dialects/params.js';
import { PacedCaller } from './paced-caller.js';
import { type Percentiles, percentiles } from './stats.js';

export interface CallFormat {
  /** As announced in session_start (an alias such as "PCM16" is sent as given). */
  readonly codec: string;
  readonly inputRate: number;
  readonly outputRate: number;
  readonly encoding: Encoding;
  /** Announced `chunk_bytes`: the size of the bridge's chunks to us; ours carry the same duration. */
  readonly chunkBytes: number;
}

export interface CallerOptions {
  readonly url: string;
  /** The default dialect's media token, sent as `Authorization: Bearer`. */
  readonly token?: string | undefined;
  /** Session id of the default dialect, the platform's call id in the others. */
  readonly sessionId: string;
  readonly customerPhone: string;
  readonly calledNumber?: string | undefined;
  readonly direction: 'inbound' | 'outbound';
  /** Which provider places the call; `default` when absent. */
  readonly dialect?: DialectName | undefined;
  /** The default dialect's format (required for it; the others take `rate` and `codec`). */
  readonly format?: CallFormat | undefined;
  /** The call's PCM rate in the other dialects (see `dialectRate`). */
  readonly rate?: number | undefined;
  readonly codec?: Codec | undefined;
  /** Credentials as the platform sends them (the other dialects). */
  readonly auth?: LegAuth | undefined;
  readonly settings?: Readonly<Record<string, unknown>> | undefined;
  readonly customParameters?: Readonly<Record<string, string>> | undefined;
  /** Keys the caller presses, each `atMs` after the audio starts. */
  readonly dtmf?: readonly { readonly digit: string; readonly atMs: number }[] | undefined;
  /** PCM16 mono at the call's rate: what the caller says. */
  readonly audio: Int16Array;
  /** How long to keep listening after the last chunk before hanging up (echoes arrive late). */
  readonly tailMs?: number | undefined;
  /** Bound on the handshake. */
  readonly connectTimeoutMs?: number | undefined;
  /** Keep what the caller heard (for SNR); off for load runs. */
  readonly keepReceived?: boolean | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Told each chunk as it is sent and each frame as it is heard (`npm run call -- --record`). */
  readonly tap?: CallerTap | undefined;
}

/** What a caller sends (PCM16 at its rate) and hears (PCM16 at the output rate), as it happens. */
export interface CallerTap {
  sent(pcm: Int16Array): void;
  heard(pcm: Int16Array): void;
  /** Each of the bridge's audio messages as it arrives, before playback: its length in samples. */
  arrived?(samples: number): void;
}

export interface CallStats {
  state: 'connecting' | 'streaming' | 'ending' | 'ended' | 'failed';
  secondsSent: number;
  secondsReceived: number;
  chunksSent: number;
  chunksReceived: number;
  /** Chunks not sent because the socket was backed up (paced-caller.ts: a real-time sender drops). */
  chunksShed: number;
  /** Names of the marks the provider acknowledged, in order (played or cleared). */
  marks: string[];
  clears: number;
  errors: { code?: string; message: string }[];
  closeCode?: number;
  closeReason?: string;
}

export interface CallReport extends CallStats {
  readonly sessionId: string;
  readonly dialect: DialectName;
  /** Gaps between the bridge's audio messages as they arrived, ms. */
  readonly interArrivalMs: Percentiles;
  /** How late our own chunks left against their schedule, ms. */
  readonly sendLatenessMs: Percentiles;
  /** What the caller heard, at `outputRate`, in playout order (empty unless `keepReceived`). */
  readonly received: Int16Array;
  readonly outputRate: number;
  /** The platform's rules the bridge broke, and what the platform did. */
  readonly breaches: readonly Breach[];
  readonly ackedMarks: readonly AckedMark[];
  readonly timeline: readonly TimelineEntry[];
  readonly flow: { readonly xoff: number; readonly xon: number };
  readonly dtmfSent: number;
}

export class SyntheticCall {
  readonly #stats: CallStats = {
    state: 'connecting',
    secondsSent: 0,
    secondsReceived: 0,
    chunksSent: 0,
    chunksReceived: 0,
    chunksShed: 0,
    marks: [],
    clears: 0,
    errors: [],
  };
  readonly leg: ProviderLeg;
  readonly #o: CallerOptions;
  readonly #lateness: number[] = [];
  #heardSamples = 0;
  #caller: PacedCaller | undefined;

  constructor(options: CallerOptions) {
    this.#o = options;
    const dialect = options.dialect ?? ROOT_DIALECT_NAME;
    const root = isRootDialect(dialect);
    const f = options.format;
    if (root && f === undefined) throw new Error(`the ${dialect} dialect needs a format`);
    this.leg = createProviderLeg(
      dialect,
      {
        url: options.url,
        callId: options.sessionId,
        from: options.customerPhone,
        to: options.calledNumber ?? '15550199',
        direction: options.direction,
        rate: root ? f!.inputRate : (options.rate ?? 8000),
        codec: options.codec,
        auth: root ? { token: options.token } : options.auth,
        connectTimeoutMs: options.connectTimeoutMs,
        keepHeard: options.keepReceived === true,
        onArrival: options.tap?.arrived === undefined ? undefined : (n) => options.tap!.arrived!(n),
        onHeard: (pcm) => {
          options.tap?.heard(pcm);
          this.#heardSamples += pcm.length;
          this.#stats.secondsReceived = this.#heardSamples / this.leg.outputRate;
        },
        customParameters: options.customParameters,
        settings: options.settings,
      },
      f === undefined
        ? undefined
        : { codecName: f.codec, outputRate: f.outputRate, encoding: f.encoding, chunkBytes: f.chunkBytes },
    );
  }

  /** The call so far (live while it runs). */
  get stats(): CallStats {
    const r = this.leg.record;
    const s = this.#stats;
    s.chunksShed = this.#caller?.stats.chunksShed ?? 0;
    s.chunksReceived = r.framesReceived;
    s.marks = r.marks.map((m) => m.name);
    s.clears = r.clears;
    s.errors = [...r.errors];
    if (r.closeCode !== undefined) s.closeCode = r.closeCode;
    if (r.closeReason !== undefined) s.closeReason = r.closeReason;
    return s;
  }

  /** The rate of the audio the caller hears. */
  get outputRate(): number {
    return this.leg.outputRate;
  }

  /** Runs the whole call; resolves with the report whether the call ended well or not. */
  async run(): Promise<CallReport> {
    const leg = this.leg;
    if (!(await leg.open())) {
      this.#stats.state = 'failed';
      return this.#report();
    }
    this.#stats.state = 'streaming';
    await this.#stream();
    if (leg.isOpen()) {
      this.#stats.state = 'ending';
      await Promise.race([leg.closed, sleep(this.#o.tailMs ?? 600, this.#o.signal)]);
      await leg.hangup();
    }
    await leg.closed;
    const code = leg.record.closeCode;
    this.#stats.state = code === 1000 || code === 1005 ? 'ended' : 'failed';
    return this.#report();
  }

  /** The caller's audio through the shared paced caller (paced-caller.ts), on its schedule. */
  async #stream(): Promise<void> {
    const o = this.#o;
    const leg = this.leg;
    const caller = new PacedCaller({
      leg,
      audio: o.audio,
      dtmf: o.dtmf,
      signal: o.signal,
      onSent: (_index, lateMs, pcm) => {
        o.tap?.sent(pcm);
        this.#lateness.push(lateMs);
        this.#stats.chunksSent = caller.stats.chunksSent;
        this.#stats.secondsSent = caller.stats.samplesSent / leg.rate;
      },
    });
    this.#caller = caller;
    await caller.start().done;
  }

  #report(): CallReport {
    const r = this.leg.record;
    this.#stats.chunksReceived = r.framesReceived;
    this.#stats.marks = r.marks.map((m) => m.name);
    this.#stats.clears = r.clears;
    this.#stats.errors = [...r.errors];
    if (r.closeCode !== undefined) this.#stats.closeCode = r.closeCode;
    if (r.closeReason !== undefined) this.#stats.closeReason = r.closeReason;
    return {
      ...this.stats,
      marks: [...this.#stats.marks],
      errors: [...this.#stats.errors],
      sessionId: this.#o.sessionId,
      dialect: this.leg.dialect,
      interArrivalMs: percentiles(r.arrivalGapsMs),
      sendLatenessMs: percentiles(this.#lateness),
      received: this.leg.heard(),
      outputRate: this.leg.outputRate,
      breaches: [...r.breaches],
      ackedMarks: [...r.marks],
      timeline: [...this.leg.timeline],
      flow: { ...r.flow },
      dtmfSent: r.dtmfSent,
    };
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
