/**
 * Asterisk `chan_websocket`, Asterisk dialing the app (`websocket_client.conf`): `MEDIA_START` first
 * (plain `key:value` text by default, JSON with `settings.control: "json"`), then binary frames of the
 * channel's codec, `optimal_frame_size` bytes each. Toward the caller: binary data is cut into whole
 * frames and leftover bytes are dropped (unless inside START/STOP_MEDIA_BUFFERING, where STOP pads the
 * last frame with silence); a message over 65,500 bytes closes the socket and hangs up; the queue holds
 * 1,000 frames, `MEDIA_XOFF` goes out at 900 and `MEDIA_XON` below 800, and data arriving after XOFF
 * (past a short grace for frames already in flight) is dropped until XON. `MARK_MEDIA <id>` answers
 * `MEDIA_MARK_PROCESSED` when it reaches the front of the queue; `FLUSH_MEDIA` empties it; DTMF is
 * `DTMF_END`. Commands are case-sensitive. Auth: Basic or a configured header, as the client config has.
 */
import { randomUUID } from 'node:crypto';
import { decodeInto, encodeInto } from '../../audio/codec.js';
import type { Codec } from '../../audio/format.js';
import { asteriskProvider } from '../../dialects/provider/asterisk.js';
import { basicAuth, pcmFromLe, pcmToLe, WsLeg } from './base.js';
import type { LegOptions, ProviderTwin } from './types.js';

const MAX_MESSAGE_BYTES = 65_500;
const INTERNAL = '\u0000';

interface AsteriskSettings {
  control: 'plain' | 'json';
  maxFrames: number;
  xoffFrames: number;
  xonFrames: number;
  xoffGraceMs: number;
}

function settingsOf(raw: Readonly<Record<string, unknown>> | undefined): AsteriskSettings {
  const n = (v: unknown, d: number) => (typeof v === 'number' && v >= 0 ? v : d);
  return {
    control: raw?.control === 'json' ? 'json' : 'plain',
    maxFrames: n(raw?.maxFrames, 1000),
    xoffFrames: n(raw?.xoffFrames, 900),
    xonFrames: n(raw?.xonFrames, 800),
    xoffGraceMs: n(raw?.xoffGraceMs, 40),
  };
}

export class AsteriskLeg extends WsLeg {
  readonly dialect = 'asterisk' as const;
  readonly chunkMs = 20;
  readonly #codec: Codec;
  readonly #format: string;
  readonly #frameBytes: number;
  readonly #s: AsteriskSettings;
  readonly #connectionId = randomUUID();
  #buffering: Uint8Array[] | undefined;
  #xoffAt: number | undefined;
  #xonTimer: NodeJS.Timeout | undefined;

  constructor(o: LegOptions) {
    const codec = o.codec ?? 'pcmu';
    const rate = codec === 'slin' ? o.rate : 8000;
    if (rate !== 8000 && rate !== 16000)
      throw new Error(`asterisk slin rate must be 8000 or 16000, got ${rate}`);
    super(o, rate);
    this.#codec = codec;
    this.#format = codec === 'pcmu' ? 'ulaw' : codec === 'pcma' ? 'alaw' : rate === 8000 ? 'slin' : 'slin16';
    this.#frameBytes = (rate / 50) * (codec === 'slin' ? 2 : 1);
    this.#s = settingsOf(o.settings);
    void this.closed.then(() => clearInterval(this.#xonTimer));
  }

  protected override headers(): Record<string, string> {
    const a = this.o.auth;
    if (a?.username !== undefined) return { authorization: basicAuth(a.username, a.password ?? '') };
    return a?.header === undefined ? {} : { [a.header.name]: a.header.value };
  }

  #notify(event: string, fields: Record<string, string | number>): void {
    if (this.#s.control === 'json') this.sendJson({ event, ...fields });
    else this.send([event, ...Object.entries(fields).map(([k, v]) => `${k}:${v}`)].join(' '));
  }

  protected handshake(): void {
    const channel = `WebSocket/${this.#connectionId}`;
    if (this.#s.control === 'json')
      this.sendJson({
        event: 'MEDIA_START',
        connection_id: this.#connectionId,
        channel,
        channel_id: this.o.callId,
        format: this.#format,
        optimal_frame_size: this.#frameBytes,
        ptime: 20,
        channel_variables: { ...this.o.customParameters },
      });
    else
      this.#notify('MEDIA_START', {
        connection_id: this.#connectionId,
        channel,
        channel_id: this.o.callId,
        format: this.#format,
        optimal_frame_size: this.#frameBytes,
        ptime: 20,
      });
  }

  sendAudio(pcm: Int16Array): void {
    if (this.#codec === 'slin') this.send(pcmToLe(pcm));
    else {
      const bytes = new Uint8Array(pcm.length);
      encodeInto(this.#codec, pcm, bytes);
      this.send(bytes);
    }
  }

  sendDtmf(digit: string): void {
    this.record.dtmfSent++;
    this.#notify('DTMF_END', this.#s.control === 'json' ? { channel_id: this.o.callId, digit } : { digit });
  }

  protected override internalMark(name: string): boolean {
    return name.startsWith(INTERNAL);
  }

  protected ackMark(name: string, how: 'played' | 'cleared'): void {
    if (how !== 'played') return; // a flush reports nothing for what it took
    if (name.startsWith(`${INTERNAL}buffered:`)) {
      const id = name.slice(INTERNAL.length + 9);
      this.#notify('MEDIA_BUFFERING_COMPLETED', id === '' ? {} : { correlation_id: id });
    } else if (name === `${INTERNAL}drained`) {
      this.#notify('QUEUE_DRAINED', {});
    } else this.#notify('MEDIA_MARK_PROCESSED', { correlation_id: name });
  }

  get #queuedFrames(): number {
    return this.playout.queuedMs / 20;
  }

  protected onBinary(bytes: Buffer): void {
    this.arrived();
    if (bytes.byteLength > MAX_MESSAGE_BYTES) {
      this.breach(
        'message_size',
        `a message of ${bytes.byteLength} bytes; at most ${MAX_MESSAGE_BYTES}`,
        'closed',
      );
      this.ws?.close(1009, 'message too big');
      return;
    }
    if (this.#xoffAt !== undefined && this.playout.now() - this.#xoffAt > this.#s.xoffGraceMs) {
      this.breach('after_xoff', `${bytes.byteLength} bytes sent after MEDIA_XOFF`, 'dropped');
      return;
    }
    if (this.#buffering !== undefined) {
      this.#buffering.push(bytes);
      const all = Buffer.concat(this.#buffering);
      const whole = all.byteLength - (all.byteLength % this.#frameBytes);
      this.#buffering = [all.subarray(whole)];
      this.#queue(all.subarray(0, whole));
      return;
    }
    const extra = bytes.byteLength % this.#frameBytes;
    if (extra !== 0)
      this.breach(
        'partial_frame',
        `${bytes.byteLength} bytes is not whole ${this.#frameBytes}-byte frames: ${extra} dropped`,
        'dropped',
      );
    this.#queue(bytes.subarray(0, bytes.byteLength - extra));
  }

  #queue(bytes: Uint8Array): void {
    if (bytes.byteLength === 0) return;
    const room = Math.max(0, Math.floor(this.#s.maxFrames - this.#queuedFrames)) * this.#frameBytes;
    if (bytes.byteLength > room) {
      this.breach(
        'queue_full',
        `${bytes.byteLength - room} bytes past the ${this.#s.maxFrames}-frame queue`,
        'dropped',
      );
      bytes = bytes.subarray(0, room);
    }
    if (this.#codec === 'slin') this.playout.pushAudio(pcmFromLe(bytes));
    else {
      const pcm = new Int16Array(bytes.byteLength);
      decodeInto(this.#codec, bytes, pcm);
      this.playout.pushAudio(pcm);
    }
    if (this.#xoffAt === undefined && this.#queuedFrames >= this.#s.xoffFrames) {
      this.#xoffAt = this.playout.now();
      this.record.flow.xoff++;
      this.#notify('MEDIA_XOFF', {});
      this.#xonTimer = setInterval(() => this.#checkXon(), 20);
      this.#xonTimer.unref();
    }
  }

  #checkXon(): void {
    if (this.#xoffAt === undefined || this.#queuedFrames >= this.#s.xonFrames) return;
    this.#xoffAt = undefined;
    clearInterval(this.#xonTimer);
    this.record.flow.xon++;
    this.#notify('MEDIA_XON', {});
  }

  protected onText(text: string): void {
    let command: string;
    let arg: string | undefined;
    if (text.startsWith('{')) {
      const msg = this.parse(text);
      if (msg === undefined) return;
      command = String(msg.command);
      arg = typeof msg.correlation_id === 'string' ? msg.correlation_id : undefined;
    } else {
      const parts = text.trim().split(/\s+/);
      command = parts[0] ?? '';
      arg = parts[1];
    }
    switch (command) {
      case 'ANSWER':
      case 'SET_MEDIA_DIRECTION':
        return;
      case 'HANGUP':
        this.ws?.close(1000);
        return;
      case 'START_MEDIA_BUFFERING':
        this.#buffering ??= [];
        return;
      case 'STOP_MEDIA_BUFFERING': {
        const rest = this.#buffering === undefined ? new Uint8Array(0) : Buffer.concat(this.#buffering);
        this.#buffering = undefined;
        if (rest.byteLength > 0) {
          const padded = new Uint8Array(this.#frameBytes);
          if (this.#codec !== 'slin') padded.fill(this.#codec === 'pcmu' ? 0xff : 0xd5);
          padded.set(rest);
          this.#queue(padded);
        }
        this.playout.pushMark(`${INTERNAL}buffered:${arg ?? ''}`);
        return;
      }
      case 'FLUSH_MEDIA':
        this.record.clears++;
        this.#buffering = undefined;
        this.playout.clear();
        return;
      case 'MARK_MEDIA':
        if (arg === undefined) this.breach('mark_id', 'MARK_MEDIA without a correlation id', 'ignored');
        else this.playout.pushMark(arg);
        return;
      case 'REPORT_QUEUE_DRAINED':
        this.playout.pushMark(`${INTERNAL}drained`);
        return;
      case 'GET_STATUS':
        this.#notify('STATUS', {
          queue_length: Math.round(this.#queuedFrames),
          xon_level: this.#s.xonFrames,
          xoff_level: this.#s.xoffFrames,
          queue_full: String(this.#queuedFrames >= this.#s.maxFrames),
          bulk_media: String(this.#buffering !== undefined),
          media_paused: 'false',
        });
        return;
      default:
        this.breach(
          'unknown_command',
          `command ${JSON.stringify(command.slice(0, 40))} (commands are case-sensitive)`,
          'ignored',
        );
    }
  }
}

/** The emulated platform of the `asterisk` dialect. */
export const asteriskTwin: ProviderTwin = {
  decl: asteriskProvider,
  rates: [8000, 16000],
  // G.711 is 8 kHz; slin may be 8 or 16 kHz.
  fixedRate: (codec) => ((codec ?? 'pcmu') !== 'slin' ? 8000 : undefined),
  codecs: ['pcmu', 'pcma', 'slin'],
  wireCodec: 'pcmu',
  chunkMs: 20,
  flags: { basic: true, header: true },
  create: (o) => new AsteriskLeg(o),
};
