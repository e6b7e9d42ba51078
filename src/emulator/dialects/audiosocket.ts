/**
 * Asterisk AudioSocket over TCP: every message is a type byte, a 16-bit big-endian length and the
 * payload. Asterisk opens with the call's UUID (0x01), then sends slin (16-bit LE) at the rate its type
 * names (0x10 8 kHz, 0x12 16 kHz...), 20 ms a message, DTMF as 0x03 with one ASCII digit, and 0x00 to
 * hang up. Toward the caller: audio of the call's type is played as it comes; there is no buffer to
 * clear and no mark, so the bridge must pace: audio arriving while more than `settings.aheadMs` (60 ms)
 * is already waiting is dropped, as is audio of another type. 0xff from the bridge is an error.
 */
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { audiosocketProvider } from '../../dialects/provider/audiosocket.js';
import { pcmFromLe, pcmToLe, sleep } from './base.js';
import { Playout } from './playout.js';
import type {
  DialectName,
  LegOptions,
  LegRecord,
  ProviderLeg,
  ProviderTwin,
  TimelineEntry,
} from './types.js';

export const AUDIOSOCKET_TYPES = {
  hangup: 0x00,
  uuid: 0x01,
  dtmf: 0x03,
  error: 0xff,
} as const;

/** The slin type byte for each rate. */
export const AUDIOSOCKET_RATE_TYPES: Readonly<Record<number, number>> = {
  8000: 0x10,
  12000: 0x11,
  16000: 0x12,
  24000: 0x13,
  32000: 0x14,
  44100: 0x15,
  48000: 0x16,
  96000: 0x17,
  192000: 0x18,
};

export function audioSocketFrame(type: number, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const out = Buffer.allocUnsafe(3 + payload.byteLength);
  out[0] = type;
  out.writeUInt16BE(payload.byteLength, 1);
  out.set(payload, 3);
  return out;
}

/** Splits a byte stream into AudioSocket messages; keeps a partial one for the next chunk. */
export class AudioSocketParser {
  #pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer, onMessage: (type: number, payload: Buffer) => void): void {
    let buf = this.#pending.byteLength === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (buf.byteLength >= 3) {
      const len = buf.readUInt16BE(1);
      if (buf.byteLength < 3 + len) break;
      onMessage(buf[0]!, buf.subarray(3, 3 + len));
      buf = buf.subarray(3 + len);
    }
    this.#pending = Buffer.from(buf);
  }
}

export function uuidBytes(uuid: string): Uint8Array {
  const hex = uuid.replaceAll('-', '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error(`an AudioSocket call id must be a UUID, got ${uuid}`);
  return Buffer.from(hex, 'hex');
}

export class AudioSocketLeg implements ProviderLeg {
  readonly dialect: DialectName = 'audiosocket';
  readonly chunkMs = 20;
  readonly rate: number;
  get outputRate(): number {
    return this.rate;
  }
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
  readonly #o: LegOptions;
  readonly #type: number;
  readonly #aheadMs: number;
  readonly #playout: Playout;
  readonly #parser = new AudioSocketParser();
  #socket: Socket | undefined;
  #open = false;
  #lastArrival = -1;
  #resolveClosed!: () => void;

  constructor(o: LegOptions) {
    const type = AUDIOSOCKET_RATE_TYPES[o.rate];
    if (type === undefined)
      throw new Error(
        `audiosocket rate must be one of ${Object.keys(AUDIOSOCKET_RATE_TYPES).join(', ')}, got ${o.rate}`,
      );
    uuidBytes(o.callId);
    this.#o = o;
    this.rate = o.rate;
    this.#type = type;
    const ahead = o.settings?.aheadMs;
    this.#aheadMs = typeof ahead === 'number' && ahead >= 0 ? ahead : 60;
    this.#playout = new Playout(
      o.rate,
      { onMark: () => {}, onHeard: o.onHeard, onArrival: o.onArrival },
      o.keepHeard === true,
    );
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
  }

  get timeline(): readonly TimelineEntry[] {
    return this.#playout.timeline;
  }

  heard(): Int16Array {
    return this.#playout.heard();
  }

  isOpen(): boolean {
    return this.#open;
  }

  backlogBytes(): number {
    return this.#socket?.writableLength ?? 0;
  }

  async open(): Promise<boolean> {
    let url: URL;
    try {
      url = new URL(this.#o.url);
      if (url.protocol !== 'tcp:' || url.port === '') throw new Error();
    } catch {
      this.record.errors.push({
        code: 'bad_url',
        message: `audiosocket needs tcp://host:port, got ${this.#o.url}`,
      });
      this.#resolveClosed();
      return false;
    }
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) });
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#parser.push(chunk, (t, p) => this.#onMessage(t, p)));
    socket.on('error', (err) => this.record.errors.push({ message: err.message }));
    socket.on('close', (hadError) => {
      // TCP has no close code: reported as WebSocket's clean (1000) or abnormal (1006) close.
      this.record.closeCode = hadError ? 1006 : 1000;
      this.#open = false;
      this.#playout.stop();
      this.#resolveClosed();
    });
    const timeout = this.#o.connectTimeoutMs ?? 5_000;
    const ok = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), timeout);
      socket.once('connect', () => {
        clearTimeout(t);
        resolve(true);
      });
      socket.once('close', () => {
        clearTimeout(t);
        resolve(false);
      });
    });
    if (!ok) {
      socket.destroy();
      return false;
    }
    this.#open = true;
    socket.write(audioSocketFrame(AUDIOSOCKET_TYPES.uuid, uuidBytes(this.#o.callId)));
    return true;
  }

  sendAudio(pcm: Int16Array): void {
    if (this.#open) this.#socket!.write(audioSocketFrame(this.#type, pcmToLe(pcm)));
  }

  sendDtmf(digit: string): void {
    if (!this.#open) return;
    this.record.dtmfSent++;
    this.#socket!.write(audioSocketFrame(AUDIOSOCKET_TYPES.dtmf, Buffer.from(digit.slice(0, 1), 'ascii')));
  }

  async hangup(): Promise<void> {
    const socket = this.#socket;
    if (socket === undefined) return;
    if (this.#open) {
      this.#open = false;
      socket.end(audioSocketFrame(AUDIOSOCKET_TYPES.hangup));
    }
    await Promise.race([this.closed, sleep(3_000)]);
    socket.destroy();
    this.#playout.stop();
  }

  #onMessage(type: number, payload: Buffer): void {
    switch (type) {
      case AUDIOSOCKET_TYPES.hangup:
        // Nothing is written after our end: a write after it errors the socket, and the call would be
        // reported failed (closed abnormally) when the bridge hung up cleanly.
        this.#open = false;
        this.#socket?.end();
        return;
      case AUDIOSOCKET_TYPES.error:
        this.record.errors.push({
          code: 'audiosocket_error',
          message: `error frame of ${payload.byteLength} bytes`,
        });
        return;
      case this.#type:
        this.#onAudio(payload);
        return;
      default:
        this.#breach(
          'frame_type',
          `a message of type 0x${type.toString(16)}; this call takes 0x${this.#type.toString(16)}`,
          'dropped',
        );
    }
  }

  #onAudio(payload: Buffer): void {
    const now = performance.now();
    if (this.#lastArrival >= 0) this.record.arrivalGapsMs.push(now - this.#lastArrival);
    this.#lastArrival = now;
    this.record.framesReceived++;
    if (payload.byteLength & 1) {
      this.#breach('odd_length', `slin audio of ${payload.byteLength} bytes is not whole samples`, 'dropped');
      return;
    }
    // Asterisk's playout goes on with the wall clock: what a stall of this process kept from playing is
    // played first, so a late timer is not taken for audio sent ahead.
    this.#playout.advance();
    if (this.#playout.queuedMs > this.#aheadMs) {
      this.#breach(
        'queued_ahead',
        `audio arrived ${Math.round(this.#playout.queuedMs)} ms ahead of playout; AudioSocket has no buffer to queue it`,
        'dropped',
      );
      return;
    }
    this.#playout.pushAudio(pcmFromLe(payload));
  }

  #breach(rule: string, detail: string, effect: 'dropped'): void {
    this.record.breaches.push({ rule, detail, effect, atMs: this.#playout.now() });
  }
}

/** The emulated platform of the `audiosocket` dialect. */
export const audiosocketTwin: ProviderTwin = {
  decl: audiosocketProvider,
  rates: [8000, 16000, 24000, 48000],
  wireCodec: 'slin',
  chunkMs: 20,
  uuidCallIds: true,
  create: (o) => new AudioSocketLeg(o),
};
