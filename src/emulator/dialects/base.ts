/**
 * What every WebSocket dialect shares: the connection (headers, subprotocol, a refused handshake
 * recorded as `http_<status>`), arrival timing of the bridge's media, the playback buffer, breaches,
 * and the close. A dialect adds its handshake frames, its framing both ways and its rules.
 */
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { Playout } from './playout.js';
import type { Breach, DialectName, LegOptions, LegRecord, ProviderLeg, TimelineEntry } from './types.js';

const CLOSE_WAIT_MS = 3_000;
/** Bound on one message from the bridge: above any platform's own (Exotel's 100 KB chunks as base64). */
const MAX_PAYLOAD_BYTES = 1024 * 1024;

export abstract class WsLeg implements ProviderLeg {
  abstract readonly dialect: DialectName;
  readonly rate: number;
  readonly outputRate: number;
  abstract readonly chunkMs: number;
  readonly record: LegRecord = {
    breaches: [],
    marks: [],
    clears: 0,
    dtmfSent: 0,
    errors: [],
    framesReceived: 0,
    arrivalGapsMs: [],
    flow: { xoff: 0, xon: 0 },
  };
  readonly closed: Promise<void>;
  protected readonly o: LegOptions;
  protected readonly playout: Playout;
  protected ws: WebSocket | undefined;
  #resolveClosed!: () => void;
  #lastArrival = -1;

  constructor(o: LegOptions, rate: number, outputRate = rate) {
    this.o = o;
    this.rate = rate;
    this.outputRate = outputRate;
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    this.playout = new Playout(
      outputRate,
      {
        onMark: (name, how) => {
          if (!this.internalMark(name)) this.record.marks.push({ name, how, atMs: this.playout.now() });
          this.ackMark(name, how);
        },
        onHeard: o.onHeard,
        onArrival: o.onArrival,
      },
      o.keepHeard === true,
      o.playout === 'arrival',
    );
  }

  get timeline(): readonly TimelineEntry[] {
    return this.playout.timeline;
  }

  heard(): Int16Array {
    return this.playout.heard();
  }

  isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  backlogBytes(): number {
    return this.ws?.bufferedAmount ?? 0;
  }

  /** Headers of the upgrade request (auth as the platform sends it). */
  protected headers(): Record<string, string> {
    return {};
  }

  protected protocols(): string[] {
    return [];
  }

  /** The platform's first frames, sent once the socket is open. */
  protected abstract handshake(): void;
  protected abstract onText(text: string): void;
  protected abstract onBinary(bytes: Buffer): void;
  /** Sends the platform's acknowledgement of a mark played out or cleared. */
  protected abstract ackMark(name: string, how: 'played' | 'cleared'): void;
  abstract sendAudio(pcm: Int16Array): void;
  abstract sendDtmf(digit: string, durationMs?: number): void;
  /** Marks the emulator queues for its own bookkeeping (not the bridge's), kept out of the record. */
  protected internalMark(_name: string): boolean {
    return false;
  }

  /** The platform's last message before it closes (Twilio `stop`...); none by default. */
  protected farewell(): void {}

  async open(): Promise<boolean> {
    const protocols = this.protocols();
    const ws = new WebSocket(this.o.url, protocols.length > 0 ? protocols : undefined, {
      headers: this.headers(),
      handshakeTimeout: this.o.connectTimeoutMs ?? 5_000,
      maxPayload: MAX_PAYLOAD_BYTES,
      perMessageDeflate: false,
    });
    this.ws = ws;
    ws.binaryType = 'nodebuffer';
    ws.on('close', (code, reason) => {
      this.record.closeCode = code;
      this.record.closeReason = reason.toString();
      this.playout.stop();
      this.#resolveClosed();
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      try {
        if (isBinary) this.onBinary(data);
        else this.onText(data.toString('utf8'));
      } catch (err) {
        // A frame the emulator cannot make sense of is recorded, never fatal to the call.
        this.error('bad_frame', (err as Error).message);
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      this.error(`http_${res.statusCode}`, `handshake refused with ${res.statusCode}`);
      res.resume();
      ws.terminate();
    });
    ws.on('error', (err) => {
      if (!this.record.errors.some((e) => e.code?.startsWith('http_'))) this.error(undefined, err.message);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('close', () => reject(new Error('closed before open')));
      });
    } catch {
      return false;
    }
    this.handshake();
    return true;
  }

  async hangup(): Promise<void> {
    const ws = this.ws;
    if (ws === undefined) return;
    if (ws.readyState === WebSocket.OPEN) {
      this.farewell();
      ws.close(1000);
    }
    await Promise.race([this.closed, sleep(CLOSE_WAIT_MS)]);
    if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
    await Promise.race([this.closed, sleep(CLOSE_WAIT_MS)]);
    this.playout.stop();
  }

  protected send(data: string | Uint8Array): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(data);
  }

  protected sendJson(msg: unknown): void {
    this.send(JSON.stringify(msg));
  }

  /** Notes the arrival of one media message from the bridge (pacing as the caller's side sees it). */
  protected arrived(): void {
    const now = performance.now();
    if (this.#lastArrival >= 0) this.record.arrivalGapsMs.push(now - this.#lastArrival);
    this.#lastArrival = now;
    this.record.framesReceived++;
  }

  protected breach(rule: string, detail: string, effect: Breach['effect']): void {
    this.record.breaches.push({ rule, detail, effect, atMs: this.playout.now() });
  }

  protected error(code: string | undefined, message: string): void {
    this.record.errors.push(code === undefined ? { message } : { code, message });
  }

  /** Ends the call abruptly, as a platform does on a fatal breach (the bridge sees 1006). */
  protected drop(): void {
    this.playout.stop();
    this.ws?.terminate();
  }

  /** JSON of a text frame, or undefined (recorded) when it is not a JSON object. */
  protected parse(text: string): Record<string, unknown> | undefined {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      this.error('bad_json', 'the bridge sent a text frame that is not JSON');
      return undefined;
    }
    if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
      this.error('bad_json', 'the bridge sent JSON that is not an object');
      return undefined;
    }
    return msg as Record<string, unknown>;
  }
}

export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

export function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** PCM16 LE bytes (any alignment) to samples; odd lengths throw. */
export function pcmFromLe(bytes: Uint8Array): Int16Array {
  if (bytes.byteLength & 1) throw new Error(`L16 audio of ${bytes.byteLength} bytes is not whole samples`);
  const out = new Int16Array(bytes.byteLength >> 1);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

/** Samples to PCM16 LE bytes (a fresh buffer: the socket may hold it). */
export function pcmToLe(pcm: Int16Array): Uint8Array {
  return new Uint8Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
}
