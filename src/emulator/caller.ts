/**
 * A synthetic caller: one provider-side media socket, as the provider would open it. It sends
 * `session_start` with the call's format, streams pre-rendered audio paced against a monotonic clock
 * (chunk k leaves at t0 + k·chunk, so lateness never accumulates), reports playback of each `mark` back,
 * counts `clear`s and `error`s, and records what comes back: seconds, chunk inter-arrival times and the
 * decoded audio. Used by the emulator, `npm run call` and the load generator.
 */
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { decodeInto, encodeInto, fromBase64, samplesIn, toBase64 } from '../audio/codec.js';
import { bytesPerSample, type Codec, type Encoding, parseCodec } from '../audio/format.js';
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
  /** Media token, sent as `Authorization: Bearer`. */
  readonly token?: string | undefined;
  readonly sessionId: string;
  readonly customerPhone: string;
  readonly direction: 'inbound' | 'outbound';
  readonly format: CallFormat;
  /** PCM16 mono at `format.inputRate`: what the caller says. */
  readonly audio: Int16Array;
  /** How long to keep listening after the last chunk before `session_end` (echoes arrive late). */
  readonly tailMs?: number;
  /** Bound on the WebSocket handshake. */
  readonly connectTimeoutMs?: number;
  /** Keep the decoded received audio (for SNR); off for load runs. */
  readonly keepReceived?: boolean;
  readonly signal?: AbortSignal;
}

export interface CallStats {
  state: 'connecting' | 'streaming' | 'ending' | 'ended' | 'failed';
  secondsSent: number;
  secondsReceived: number;
  chunksSent: number;
  chunksReceived: number;
  /** Chunks not sent because the socket was backed up past `SEND_HIGH_WATER_BYTES` (a real-time sender drops). */
  chunksShed: number;
  marks: string[];
  clears: number;
  errors: { code?: string; message: string }[];
  closeCode?: number;
  closeReason?: string;
}

export interface CallReport extends CallStats {
  readonly sessionId: string;
  /** Gaps between received audio chunks, ms. */
  readonly interArrivalMs: Percentiles;
  /** How late our own chunks left against their schedule, ms. */
  readonly sendLatenessMs: Percentiles;
  /** Decoded received audio at `format.outputRate` (empty unless `keepReceived`). */
  readonly received: Int16Array;
}

const CLOSE_WAIT_MS = 3_000;
/** Unsent bytes past which a chunk is dropped instead of queued: ~1.6 s of 16 kHz PCM16 as base64. */
const SEND_HIGH_WATER_BYTES = 64 * 1024;

export class SyntheticCall {
  readonly stats: CallStats = {
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
  readonly #o: CallerOptions;
  readonly #codec: Codec;
  readonly #arrivals: number[] = [];
  readonly #lateness: number[] = [];
  readonly #received: Int16Array[] = [];
  #lastArrival = -1;
  #samplesReceived = 0;

  constructor(options: CallerOptions) {
    this.#o = options;
    this.#codec = parseCodec(options.format.codec);
  }

  /** The rate of the audio the bridge sends back. */
  get outputRate(): number {
    return this.#o.format.outputRate;
  }

  /** Runs the whole call; resolves with the report whether the call ended well or not. */
  async run(): Promise<CallReport> {
    const o = this.#o;
    const ws = new WebSocket(o.url, {
      headers: o.token === undefined ? {} : { authorization: `Bearer ${o.token}` },
      handshakeTimeout: o.connectTimeoutMs ?? 5_000,
      maxPayload: 1024 * 1024,
    });
    ws.binaryType = 'nodebuffer';
    const closed = new Promise<void>((resolve) => {
      ws.on('close', (code, reason) => {
        this.stats.closeCode = code;
        this.stats.closeReason = reason.toString();
        resolve();
      });
    });
    ws.on('message', (data, isBinary) => this.#onMessage(ws, data as Buffer, isBinary));
    ws.on('unexpected-response', (_req, res) => {
      this.stats.errors.push({
        code: `http_${res.statusCode}`,
        message: `handshake refused with ${res.statusCode}`,
      });
      // With this listener installed, ending the refused handshake is ours to do.
      res.resume();
      ws.terminate();
    });
    ws.on('error', (err) => {
      if (!this.stats.errors.some((e) => e.code?.startsWith('http_')))
        this.stats.errors.push({ message: err.message });
    });
    try {
      await new Promise<void>((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('close', () => reject(new Error('closed before open')));
      });
    } catch {
      this.stats.state = 'failed';
      return this.#report();
    }
    const f = o.format;
    ws.send(
      JSON.stringify({
        event: 'session_start',
        session_id: o.sessionId,
        customer_phone: o.customerPhone,
        direction: o.direction,
        started_at: new Date().toISOString(),
        media: {
          codec: f.codec,
          sample_rate: f.inputRate,
          output_sample_rate: f.outputRate,
          encoding: f.encoding,
          chunk_bytes: f.chunkBytes,
        },
      }),
    );
    this.stats.state = 'streaming';
    await this.#stream(ws, closed);
    if (ws.readyState === WebSocket.OPEN) {
      this.stats.state = 'ending';
      await Promise.race([closed, sleep(o.tailMs ?? 600, o.signal)]);
      if ((ws.readyState as number) === WebSocket.OPEN)
        ws.send(JSON.stringify({ event: 'session_end', reason: 'hangup' }));
      await Promise.race([closed, sleep(CLOSE_WAIT_MS)]);
      if ((ws.readyState as number) !== WebSocket.CLOSED) ws.close(1000);
      await Promise.race([closed, sleep(CLOSE_WAIT_MS)]);
    }
    this.stats.state = this.stats.closeCode === 1000 || this.stats.closeCode === 1005 ? 'ended' : 'failed';
    return this.#report();
  }

  /** Paced send: chunk k is due at t0 + k·chunkMs; every due chunk goes out on each wake-up. */
  async #stream(ws: WebSocket, closed: Promise<void>): Promise<void> {
    const o = this.#o;
    const f = o.format;
    const chunkMs = (f.chunkBytes / (bytesPerSample(this.#codec) * f.outputRate)) * 1000;
    const samplesPerChunk = Math.max(1, Math.round((f.inputRate * chunkMs) / 1000));
    const total = Math.ceil(o.audio.length / samplesPerChunk);
    let stop = false;
    void closed.then(() => {
      stop = true;
    });
    let samplesSent = 0;
    const t0 = performance.now();
    for (let k = 0; k < total && !stop && o.signal?.aborted !== true; ) {
      const now = performance.now();
      while (k < total && t0 + k * chunkMs <= now + 0.5) {
        const pcm = o.audio.subarray(k * samplesPerChunk, (k + 1) * samplesPerChunk);
        if (ws.bufferedAmount > SEND_HIGH_WATER_BYTES) {
          // The far end is not reading: a real-time source drops audio rather than queue it without bound.
          this.stats.chunksShed++;
          k++;
          continue;
        }
        // A fresh buffer per chunk: the socket may still hold the previous one when backpressured.
        const bytes = new Uint8Array(pcm.length * bytesPerSample(this.#codec));
        encodeInto(this.#codec, pcm, bytes);
        if (f.encoding === 'binary') ws.send(bytes);
        else
          ws.send(
            JSON.stringify({
              event: 'media',
              payload: toBase64(bytes),
              seq: k,
              timestamp: Math.round(k * chunkMs),
            }),
          );
        this.#lateness.push(now - (t0 + k * chunkMs));
        this.stats.chunksSent++;
        samplesSent += pcm.length;
        this.stats.secondsSent = samplesSent / f.inputRate;
        k++;
      }
      if (k < total) await sleep(Math.max(0, t0 + k * chunkMs - performance.now()));
    }
  }

  #onMessage(ws: WebSocket, data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      this.#onAudio(data);
      return;
    }
    let msg: { event?: unknown; payload?: unknown; name?: unknown; code?: unknown; message?: unknown };
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      this.stats.errors.push({ code: 'bad_json', message: 'the bridge sent a text frame that is not JSON' });
      return;
    }
    switch (msg.event) {
      case 'media':
        if (typeof msg.payload === 'string') {
          try {
            this.#onAudio(fromBase64(msg.payload));
          } catch (err) {
            this.stats.errors.push({ code: 'bad_base64', message: (err as Error).message });
          }
        }
        break;
      case 'mark':
        // Audio is "played" as it arrives (the bridge paces it), so playback has reached the mark now.
        this.stats.marks.push(String(msg.name));
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ event: 'mark', name: msg.name }));
        break;
      case 'clear':
        this.stats.clears++;
        break;
      case 'error':
        this.stats.errors.push({ code: String(msg.code), message: String(msg.message) });
        break;
    }
  }

  #onAudio(bytes: Uint8Array): void {
    const now = performance.now();
    if (this.#lastArrival >= 0) this.#arrivals.push(now - this.#lastArrival);
    this.#lastArrival = now;
    this.stats.chunksReceived++;
    let n: number;
    try {
      n = samplesIn(this.#codec, bytes.byteLength);
    } catch (err) {
      this.stats.errors.push({ code: 'odd_length', message: (err as Error).message });
      return;
    }
    this.#samplesReceived += n;
    this.stats.secondsReceived = this.#samplesReceived / this.#o.format.outputRate;
    if (this.#o.keepReceived === true) {
      const pcm = new Int16Array(n);
      decodeInto(this.#codec, bytes, pcm);
      this.#received.push(pcm);
    }
  }

  #report(): CallReport {
    const received = new Int16Array(this.#received.reduce((s, c) => s + c.length, 0));
    let at = 0;
    for (const c of this.#received) {
      received.set(c, at);
      at += c.length;
    }
    return {
      ...this.stats,
      marks: [...this.stats.marks],
      errors: [...this.stats.errors],
      sessionId: this.#o.sessionId,
      interArrivalMs: percentiles(this.#arrivals),
      sendLatenessMs: percentiles(this.#lateness),
      received,
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
