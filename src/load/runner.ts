/**
 * Runs many synthetic calls against a media endpoint from one process: each call is an emulated
 * provider (src/emulator/dialects/, the default dialect unless asked) whose audio, 20 ms chunks with a
 * timing marker every interval, goes out through the shared paced caller (src/emulator/paced-caller.ts:
 * a drift-free real-time schedule, one timer for every call of the process). Each marker's round trip
 * through the bot is timed from the chunk that carried it out to the chunk that brought it back.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Codec, Encoding } from '../audio/format.js';
import {
  createProviderLeg,
  type DialectName,
  type LegAuth,
  type ProviderLeg,
  TWINS,
} from '../emulator/dialects/index.js';
import { isRootDialect, ROOT_DIALECT_NAME } from '../emulator/dialects/params.js';
import { callerLoop, PacedCaller } from '../emulator/paced-caller.js';
import { fillChunk, type MarkerPlan, markerPlan, OnsetDetector } from './markers.js';
import { Histogram } from './stats.js';

export interface RunOptions {
  readonly url: string;
  readonly calls: number;
  /** Seconds of full load after the ramp. */
  readonly seconds: number;
  /** Seconds over which calls start. */
  readonly rampSeconds: number;
  readonly rate: 8000 | 16000;
  readonly codec: Codec;
  readonly encoding: Encoding;
  readonly token: string | undefined;
  /** Background audio at `rate`, looped. */
  readonly background: Int16Array;
  readonly chunkMs: number;
  readonly markerEveryMs: number;
  readonly markerBurstMs: number;
  /** How long to keep listening for markers after sending stops. */
  readonly drainMs: number;
  /** A marker not back after this long is lost. */
  readonly markerTimeoutMs: number;
  /** Session ids are `${idPrefix}-${n}`. */
  readonly idPrefix: string;
  /** Which provider places the calls (src/emulator/dialects/); the default dialect when absent. */
  readonly dialect?: DialectName | undefined;
  /** The platform's credentials, for the other dialects (`token` above is the default's). */
  readonly auth?: LegAuth | undefined;
  /** The wire codec of the other dialects, where the platform offers a choice (else its own). */
  readonly dialectCodec?: Codec | undefined;
  /** The target's /metrics, where the media URL does not tell it (AudioSocket's tcp:// listener). */
  readonly metricsUrl?: string | undefined;
}

/** What a process measured: plain data, so it can cross to a parent process and merge. */
export interface RunResult {
  callsStarted: number;
  callsConnected: number;
  callsFailed: number;
  /** Calls whose socket closed before the run ended it. */
  callsDropped: number;
  failures: Record<string, number>;
  markersSent: number;
  markersReturned: number;
  markersLost: number;
  /** Onsets found in returned audio that matched no marker. */
  markersUnmatched: number;
  errorEvents: number;
  /** Platform rules the bridge broke, as the emulated providers recorded them. */
  breaches: number;
  samplesSent: number;
  samplesReceived: number;
  /** Chunks not sent because the call's socket was backed up (a real-time caller drops them). */
  chunksShed: number;
  rtt: { counts: Uint32Array; max: number };
  interArrival: { counts: Uint32Array; max: number };
  cpuMs: number;
  wallMs: number;
}

export interface Progress {
  readonly connected: number;
  readonly failed: number;
  readonly markersReturned: number;
  readonly markersLost: number;
  /** Round trips measured since the previous progress report. */
  readonly recentRttMs: number[];
}

class LoadCall {
  /** The emulated provider of the call. */
  leg: ProviderLeg | undefined;
  caller: PacedCaller | undefined;
  open = false;
  done = false;
  startAt = 0;
  /** Send times of markers not yet back, oldest first. */
  readonly outstanding: number[] = [];
  readonly detector: OnsetDetector;

  constructor(
    readonly id: string,
    plan: MarkerPlan,
  ) {
    this.detector = new OnsetDetector(plan);
  }
}

export class LoadRun {
  readonly #o: RunOptions;
  readonly #plan: MarkerPlan;
  readonly #calls: LoadCall[] = [];
  readonly #rtt = new Histogram(10_000);
  readonly #gaps = new Histogram(2_000);
  readonly #recent: number[] = [];
  readonly #r: Omit<RunResult, 'rtt' | 'interArrival' | 'cpuMs' | 'wallMs'> = {
    callsStarted: 0,
    callsConnected: 0,
    callsFailed: 0,
    callsDropped: 0,
    failures: {},
    markersSent: 0,
    markersReturned: 0,
    markersLost: 0,
    markersUnmatched: 0,
    errorEvents: 0,
    breaches: 0,
    samplesSent: 0,
    samplesReceived: 0,
    chunksShed: 0,
  };
  #t0 = 0;
  #stopSendingAt = 0;

  constructor(options: RunOptions) {
    this.#o = options;
    this.#plan = markerPlan(options.rate, options.chunkMs, options.markerEveryMs, options.markerBurstMs);
  }

  progress(): Progress {
    const recent = this.#recent.splice(0);
    return {
      connected: this.#r.callsConnected,
      failed: this.#r.callsFailed,
      markersReturned: this.#r.markersReturned,
      markersLost: this.#r.markersLost,
      recentRttMs: recent,
    };
  }

  async run(): Promise<RunResult> {
    const o = this.#o;
    const cpu0 = process.cpuUsage();
    this.#t0 = performance.now();
    const rampMs = o.rampSeconds * 1000;
    this.#stopSendingAt = this.#t0 + rampMs + o.seconds * 1000;
    for (let i = 0; i < o.calls; i++) {
      const call = new LoadCall(`${o.idPrefix}-${i}`, this.#plan);
      call.startAt = this.#t0 + (o.calls > 1 ? (rampMs * i) / o.calls : 0);
      this.#calls.push(call);
    }
    // The ramp rides the callers' timer: each call starts when its time has come.
    const loop = callerLoop();
    let next = 0;
    const ramp = {
      service: (now: number): number => {
        while (next < this.#calls.length && this.#calls[next]!.startAt <= now)
          this.#connect(this.#calls[next++]!);
        return next < this.#calls.length ? this.#calls[next]!.startAt : Number.POSITIVE_INFINITY;
      },
    };
    loop.add(ramp);
    loop.wakeBy(ramp, this.#t0);
    await sleep(this.#stopSendingAt - performance.now() + o.drainMs);
    loop.delete(ramp);
    const closing: Promise<void>[] = [];
    for (const call of this.#calls) closing.push(this.#end(call));
    await Promise.all(closing);
    const cpu = process.cpuUsage(cpu0);
    return {
      ...this.#r,
      rtt: { counts: this.#rtt.counts, max: this.#rtt.max },
      interArrival: { counts: this.#gaps.counts, max: this.#gaps.max },
      cpuMs: (cpu.user + cpu.system) / 1000,
      wallMs: performance.now() - this.#t0,
    };
  }

  #fail(call: LoadCall, reason: string): void {
    if (call.done) return;
    call.done = true;
    this.#r.callsFailed++;
    this.#r.failures[reason] = (this.#r.failures[reason] ?? 0) + 1;
  }

  /** A call placed through an emulated provider: its handshake, framing and playout rules. */
  #connect(call: LoadCall): void {
    const o = this.#o;
    this.#r.callsStarted++;
    const dialect = o.dialect ?? ROOT_DIALECT_NAME;
    // The root dialect's session id is the id itself; a platform naming calls by UUID gets one; the
    // others keep the id as a prefix, for the bridge's logs.
    const root = isRootDialect(dialect);
    const callId = root
      ? call.id
      : TWINS[dialect].uuidCallIds
        ? randomUUID()
        : `${call.id}-${randomUUID().slice(0, 8)}`;
    let leg: ProviderLeg;
    try {
      leg = createProviderLeg(
        dialect,
        {
          url: o.url,
          callId,
          from: '15550100000',
          to: '15550199',
          direction: 'inbound',
          rate: o.rate,
          codec: root ? o.codec : o.dialectCodec,
          auth: root ? { token: o.token } : o.auth,
          connectTimeoutMs: 10_000,
          onHeard: (pcm) => this.#heard(call, pcm),
          // The root dialect's round trips are timed at the socket, as this generator always has;
          // the platforms' at their playout, where their rules act.
          playout: root ? 'arrival' : 'realtime',
        },
        root
          ? {
              codecName: o.codec,
              outputRate: o.rate,
              encoding: o.encoding,
              chunkBytes: this.#plan.chunkSamples * (o.codec === 'slin' ? 2 : 1),
            }
          : undefined,
      );
    } catch (err) {
      this.#fail(call, (err as Error).message);
      return;
    }
    call.leg = leg;
    void leg.open().then((ok) => {
      if (!ok) {
        this.#fail(call, leg.record.errors[0]?.code ?? 'connect_error');
        return;
      }
      if (call.done) return;
      // The call's audio clock starts when its connection opens, as a provider's does: anchoring it at
      // the planned start would open with a burst of everything "owed" during the handshake, which the
      // bridge then paces out at real time as a standing backlog.
      call.open = true;
      this.#r.callsConnected++;
      this.#startAudio(call, leg);
    });
    void leg.closed.then(() => {
      // A connection that never opened is counted by open() above, as failed.
      if (!call.open) return;
      if (!call.done) this.#r.callsDropped++;
      call.open = false;
      call.done = true;
    });
  }

  /** The caller's audio: the background with a marker every interval, until the run stops sending. */
  #startAudio(call: LoadCall, leg: ProviderLeg): void {
    const o = this.#o;
    let marker = false;
    call.caller = new PacedCaller({
      leg,
      audio: (index, out) => {
        marker = fillChunk(this.#plan, o.background, index, out);
      },
      until: this.#stopSendingAt,
      onSent: () => {
        if (marker) {
          call.outstanding.push(performance.now());
          this.#r.markersSent++;
        }
      },
    }).start();
  }

  /** What the caller heard: at arrival in the default dialect, at playout in the others. */
  #heard(call: LoadCall, pcm: Int16Array): void {
    const now = performance.now();
    this.#r.samplesReceived += pcm.length;
    if (call.detector.push(pcm) >= 0) this.#matchMarker(call, now);
  }

  #matchMarker(call: LoadCall, now: number): void {
    const out = call.outstanding;
    while (out.length > 0 && now - out[0]! > this.#o.markerTimeoutMs) {
      out.shift();
      this.#r.markersLost++;
    }
    const sentAt = out.shift();
    if (sentAt === undefined) {
      this.#r.markersUnmatched++;
      return;
    }
    const rtt = now - sentAt;
    this.#rtt.add(rtt);
    this.#recent.push(rtt);
    this.#r.markersReturned++;
  }

  async #end(call: LoadCall): Promise<void> {
    this.#r.markersLost += call.outstanding.length;
    call.outstanding.length = 0;
    const leg = call.leg;
    if (leg === undefined) return;
    call.done = true;
    const caller = call.caller;
    if (caller !== undefined) {
      caller.stop();
      this.#r.samplesSent += caller.stats.samplesSent;
      this.#r.chunksShed += caller.stats.chunksShed;
    }
    await leg.hangup();
    for (const gap of leg.record.arrivalGapsMs) this.#gaps.add(gap);
    this.#r.breaches += leg.record.breaches.length;
    this.#r.errorEvents += leg.record.errors.length;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
