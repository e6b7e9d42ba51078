/**
 * Runs many synthetic calls against a media endpoint from one process: each call sends `session_start`
 * and then 20 ms chunks on a drift-free real-time schedule, with a timing marker every interval, and
 * times each marker's round trip through the bot from the chunk that carried it out to the chunk that
 * brought it back. One timer serves all calls of the process.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { decodeInto, encodeInto, fromBase64, pcm16View, toBase64 } from '../audio/codec.js';
import type { Codec, Encoding } from '../audio/format.js';
import {
  createProviderLeg,
  type DialectName,
  type LegAuth,
  type ProviderLeg,
} from '../emulator/dialects/index.js';
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
  ws: WebSocket | undefined;
  /** The emulated provider of a call in another dialect than the default. */
  leg: ProviderLeg | undefined;
  open = false;
  done = false;
  /** Chunks sent so far. */
  index = 0;
  startAt = 0;
  /** Send times of markers not yet back, oldest first. */
  readonly outstanding: number[] = [];
  lastArrival = -1;
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
  readonly #pcm: Int16Array;
  readonly #wire: Uint8Array;
  #decoded: Int16Array;
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
  };
  #t0 = 0;
  #stopSendingAt = 0;

  constructor(options: RunOptions) {
    this.#o = options;
    this.#plan = markerPlan(options.rate, options.chunkMs, options.markerEveryMs, options.markerBurstMs);
    this.#pcm = new Int16Array(this.#plan.chunkSamples);
    this.#wire = new Uint8Array(this.#plan.chunkSamples * 2);
    this.#decoded = new Int16Array(4096);
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
    let next = 0;
    // One timer for every call: start those whose time has come, send every chunk that is due.
    const timer = setInterval(() => {
      const now = performance.now();
      while (next < this.#calls.length && this.#calls[next]!.startAt <= now)
        this.#connect(this.#calls[next++]!);
      if (now < this.#stopSendingAt) for (const call of this.#calls) if (call.open) this.#sendDue(call, now);
    }, 5);
    await sleep(this.#stopSendingAt - performance.now() + o.drainMs);
    clearInterval(timer);
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

  #connect(call: LoadCall): void {
    const o = this.#o;
    this.#r.callsStarted++;
    if (o.dialect !== undefined && o.dialect !== 'default') {
      this.#connectLeg(call, o.dialect);
      return;
    }
    const headers: Record<string, string> = {};
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    const ws = new WebSocket(o.url, { headers, perMessageDeflate: false, handshakeTimeout: 10_000 });
    call.ws = ws;
    ws.binaryType = 'nodebuffer';
    ws.on('unexpected-response', (_req, res) => {
      this.#fail(call, `http_${res.statusCode}`);
      ws.terminate();
    });
    ws.on('error', (err: NodeJS.ErrnoException) => {
      if (!call.open) this.#fail(call, err.code ?? 'connect_error');
    });
    ws.on('open', () => {
      // The call's audio clock starts when its socket opens, as a provider's does: anchoring it at the
      // planned start would open with a burst of everything "owed" during the handshake, which the bridge
      // then paces out at real time as a standing backlog.
      call.startAt = performance.now();
      call.open = true;
      this.#r.callsConnected++;
      ws.send(this.#sessionStart(call));
      this.#sendDue(call, performance.now());
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#receive(call, data, isBinary));
    ws.on('close', () => {
      if (call.open && !call.done) this.#r.callsDropped++;
      call.open = false;
      call.done = true;
    });
  }

  /** A call placed through an emulated provider: its handshake, framing and playout rules. */
  #connectLeg(call: LoadCall, dialect: DialectName): void {
    const o = this.#o;
    // AudioSocket names calls by UUID; the id prefix stays in the others for the bridge's logs.
    const callId = dialect === 'audiosocket' ? randomUUID() : `${call.id}-${randomUUID().slice(0, 8)}`;
    let leg: ProviderLeg;
    try {
      leg = createProviderLeg(dialect, {
        url: o.url,
        callId,
        from: '15550100000',
        to: '15550199',
        direction: 'inbound',
        rate: o.rate,
        codec: o.dialectCodec,
        auth: o.auth,
        connectTimeoutMs: 10_000,
        onHeard: (pcm) => this.#heard(call, pcm),
      });
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
      call.startAt = performance.now();
      call.open = true;
      this.#r.callsConnected++;
      this.#sendDue(call, performance.now());
    });
    void leg.closed.then(() => {
      if (call.open && !call.done) this.#r.callsDropped++;
      call.open = false;
      call.done = true;
    });
  }

  /** What the caller of a dialect call heard, at its playout time. */
  #heard(call: LoadCall, pcm: Int16Array): void {
    const now = performance.now();
    this.#r.samplesReceived += pcm.length;
    if (call.detector.push(pcm) >= 0) this.#matchMarker(call, now);
  }

  #sessionStart(call: LoadCall): string {
    const o = this.#o;
    const bytesPerSample = o.codec === 'slin' ? 2 : 1;
    return JSON.stringify({
      event: 'session_start',
      session_id: call.id,
      customer_phone: '15550100000',
      direction: 'inbound',
      started_at: new Date().toISOString(),
      media: {
        codec: o.codec,
        sample_rate: o.rate,
        output_sample_rate: o.rate,
        encoding: o.encoding,
        chunk_bytes: this.#plan.chunkSamples * bytesPerSample,
      },
    });
  }

  /** Sends every chunk whose time has come: chunk i is due at the call's start + i chunks. */
  #sendDue(call: LoadCall, now: number): void {
    const o = this.#o;
    const ws = call.ws!;
    while (call.startAt + call.index * o.chunkMs <= now) {
      const marker = fillChunk(this.#plan, o.background, call.index, this.#pcm);
      if (call.leg !== undefined) {
        // Every leg encodes the chunk before it returns, so the scratch serves every call.
        call.leg.sendAudio(this.#pcm);
        if (marker) {
          call.outstanding.push(performance.now());
          this.#r.markersSent++;
        }
        this.#r.samplesSent += this.#plan.chunkSamples;
        call.index++;
        continue;
      }
      const n = encodeInto(o.codec, this.#pcm, this.#wire);
      // ws copies the bytes when it masks the frame, so one scratch buffer serves every call.
      const bytes = this.#wire.subarray(0, n);
      if (o.encoding === 'binary') ws.send(bytes);
      else ws.send(`{"event":"media","seq":${call.index},"payload":"${toBase64(bytes)}"}`);
      if (marker) {
        call.outstanding.push(performance.now());
        this.#r.markersSent++;
      }
      this.#r.samplesSent += this.#plan.chunkSamples;
      call.index++;
    }
  }

  #receive(call: LoadCall, data: Buffer, isBinary: boolean): void {
    let bytes: Uint8Array;
    if (isBinary) bytes = data;
    else {
      let msg: { event?: unknown; payload?: unknown };
      try {
        msg = JSON.parse(data.toString('utf8')) as typeof msg;
      } catch {
        return;
      }
      if (msg.event === 'error') this.#r.errorEvents++;
      if (msg.event !== 'media' || typeof msg.payload !== 'string') return;
      try {
        bytes = fromBase64(msg.payload);
      } catch {
        return;
      }
    }
    const now = performance.now();
    if (call.lastArrival >= 0) this.#gaps.add(now - call.lastArrival);
    call.lastArrival = now;
    const codec = this.#o.codec;
    let samples: Int16Array;
    if (codec === 'slin') {
      if (bytes.byteLength & 1) return;
      samples = pcm16View(bytes, this.#scratch(bytes.byteLength >> 1));
    } else {
      samples = this.#scratch(bytes.byteLength);
      decodeInto(codec, bytes, samples);
    }
    this.#r.samplesReceived += samples.length;
    if (call.detector.push(samples) >= 0) this.#matchMarker(call, now);
  }

  #scratch(samples: number): Int16Array {
    if (this.#decoded.length < samples) this.#decoded = new Int16Array(samples * 2);
    return this.#decoded.subarray(0, samples);
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
    if (leg !== undefined) {
      call.done = true;
      await leg.hangup();
      for (const gap of leg.record.arrivalGapsMs) this.#gaps.add(gap);
      this.#r.breaches += leg.record.breaches.length;
      this.#r.errorEvents += leg.record.errors.length;
      return;
    }
    const ws = call.ws;
    if (ws === undefined) return;
    call.done = true;
    if (ws.readyState === WebSocket.OPEN) {
      ws.send('{"event":"session_end","reason":"load run over"}');
      ws.close(1000);
    } else if (ws.readyState === WebSocket.CONNECTING) {
      ws.terminate();
    }
    if (ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2_000);
      ws.once('close', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
