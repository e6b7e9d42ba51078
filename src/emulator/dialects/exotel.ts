/**
 * Exotel Voicebot applet: HTTP Basic on the upgrade (`wss://KEY:TOKEN@host`), then `connected`, `start`
 * and ~100 ms `media` chunks of base64 slin (16-bit LE mono) at 8, 16 or 24 kHz. Toward the caller: each
 * `media` chunk must be a multiple of 320 bytes and 3.2 KB to 100 KB; a chunk that is not is dropped and
 * the platform waits 20 ms before the next (a gap the caller hears). `mark` comes back after the audio
 * before it played; `clear` empties the buffer and sends the pending marks back.
 */
import { fromBase64, toBase64 } from '../../audio/codec.js';
import { exotelProvider } from '../../dialects/provider/exotel.js';
import { basicAuth, obj, pcmFromLe, pcmToLe } from './base.js';
import { TwilioLeg } from './twilio.js';
import type { LegOptions, ProviderTwin } from './types.js';

const MULTIPLE = 320;
const MIN_BYTES = 3_200;
const MAX_BYTES = 100_000;
const GAP_MS = 20;

export class ExotelLeg extends TwilioLeg {
  override readonly dialect = 'exotel' as const;
  override readonly chunkMs: number = 100;

  constructor(o: LegOptions) {
    if (o.rate !== 8000 && o.rate !== 16000 && o.rate !== 24000)
      throw new Error(`exotel rate must be 8000, 16000 or 24000, got ${o.rate}`);
    super(o, o.rate);
  }

  protected override headers(): Record<string, string> {
    const a = this.o.auth;
    return a?.username === undefined ? {} : { authorization: basicAuth(a.username, a.password ?? '') };
  }

  protected override handshake(): void {
    this.sendJson({ event: 'connected' });
    this.sendJson({
      event: 'start',
      sequence_number: Number(this.nextSeq()),
      stream_sid: this.streamId,
      start: {
        stream_sid: this.streamId,
        call_sid: this.o.callId,
        account_sid: this.accountSid,
        from: this.o.from,
        to: this.o.to,
        custom_parameters: { ...this.o.customParameters },
        media_format: { encoding: 'audio/x-raw', sample_rate: String(this.rate), bit_rate: '16' },
      },
    });
  }

  override sendAudio(pcm: Int16Array): void {
    this.chunk++;
    this.sendJson({
      event: 'media',
      sequence_number: Number(this.nextSeq()),
      stream_sid: this.streamId,
      media: {
        chunk: this.chunk,
        timestamp: String((this.chunk - 1) * this.chunkMs),
        payload: toBase64(pcmToLe(pcm)),
      },
    });
  }

  override sendDtmf(digit: string, durationMs = 250): void {
    this.record.dtmfSent++;
    this.sendJson({
      event: 'dtmf',
      sequence_number: Number(this.nextSeq()),
      stream_sid: this.streamId,
      dtmf: { digit, duration: String(durationMs) },
    });
  }

  protected override farewell(): void {
    this.sendJson({
      event: 'stop',
      sequence_number: Number(this.nextSeq()),
      stream_sid: this.streamId,
      stop: { call_sid: this.o.callId, account_sid: this.accountSid, reason: 'callended' },
    });
  }

  protected override ackMark(name: string): void {
    this.sendJson({
      event: 'mark',
      sequence_number: Number(this.nextSeq()),
      stream_sid: this.streamId,
      mark: { name },
    });
  }

  protected override streamIdOf(msg: Record<string, unknown>): unknown {
    return msg.stream_sid;
  }

  protected override onMedia(msg: Record<string, unknown>): void {
    const payload = obj(msg.media)?.payload;
    let bytes: Uint8Array;
    try {
      if (typeof payload !== 'string') throw new Error();
      bytes = fromBase64(payload);
    } catch {
      this.breach('media_payload', 'media.payload missing or not base64', 'dropped');
      return;
    }
    this.arrived();
    const n = bytes.byteLength;
    if (n % MULTIPLE !== 0 || n < MIN_BYTES || n > MAX_BYTES) {
      this.breach(
        'chunk_size',
        `a chunk of ${n} bytes; Exotel takes multiples of ${MULTIPLE} from ${MIN_BYTES} to ${MAX_BYTES}`,
        'gap',
      );
      this.playout.pushGap(GAP_MS);
      return;
    }
    this.playout.pushAudio(pcmFromLe(bytes));
  }
}

/** The emulated platform of the `exotel` dialect. */
export const exotelTwin: ProviderTwin = {
  decl: exotelProvider,
  rates: [8000, 16000, 24000],
  wireCodec: 'slin',
  // Exotel sends about 100 ms a frame.
  chunkMs: 100,
  flags: { basic: true },
  create: (o) => new ExotelLeg(o),
};
