/**
 * The voice API provider's own media protocol (docs/protocol.md), the bridge's default dialect: the
 * media JWT as `Authorization: Bearer`, `session_start` with the call's format, then audio as binary
 * frames or base64 `media` events; `session_end` on hang-up. Toward the caller: audio is played at real
 * time in arrival order, a `mark` is reported back once the audio before it played, `clear` drops what
 * is queued, `error` events are recorded.
 */
import { decodeInto, encodeInto, fromBase64, samplesIn, toBase64 } from '../../audio/codec.js';
import { bytesForMs, bytesPerSample, type Codec, parseCodec } from '../../audio/format.js';
import { defaultProvider } from '../../dialects/provider/default.js';
import { WsLeg } from './base.js';
import type { DefaultSettings, LegOptions, ProviderTwin } from './types.js';

export type { DefaultSettings } from './types.js';

export class DefaultLeg extends WsLeg {
  readonly dialect = 'default' as const;
  readonly chunkMs: number;
  readonly #s: DefaultSettings;
  readonly #codec: Codec;
  #seq = 0;

  constructor(o: LegOptions, s: DefaultSettings) {
    super(o, o.rate, s.outputRate);
    this.#s = s;
    this.#codec = parseCodec(s.codecName);
    this.chunkMs = (s.chunkBytes / (bytesPerSample(this.#codec) * s.outputRate)) * 1000;
  }

  protected override headers(): Record<string, string> {
    const token = this.o.auth?.token;
    return token === undefined ? {} : { authorization: `Bearer ${token}` };
  }

  protected handshake(): void {
    const s = this.#s;
    this.sendJson({
      event: 'session_start',
      session_id: this.o.callId,
      customer_phone: this.o.from,
      direction: this.o.direction,
      started_at: new Date().toISOString(),
      media: {
        codec: s.codecName,
        sample_rate: this.rate,
        output_sample_rate: s.outputRate,
        encoding: s.encoding,
        chunk_bytes: s.chunkBytes,
      },
    });
  }

  sendAudio(pcm: Int16Array): void {
    // A fresh buffer per chunk: the socket may still hold the previous one when backpressured.
    const bytes = new Uint8Array(pcm.length * bytesPerSample(this.#codec));
    encodeInto(this.#codec, pcm, bytes);
    if (this.#s.encoding === 'binary') this.send(bytes);
    else {
      const seq = this.#seq++;
      this.sendJson({
        event: 'media',
        payload: toBase64(bytes),
        seq,
        timestamp: Math.round(seq * this.chunkMs),
      });
    }
  }

  sendDtmf(digit: string): void {
    this.record.dtmfSent++;
    this.sendJson({ event: 'dtmf', digit });
  }

  protected override farewell(): void {
    this.sendJson({ event: 'session_end', reason: 'hangup' });
  }

  protected ackMark(name: string, how: 'played' | 'cleared'): void {
    if (how === 'played') this.sendJson({ event: 'mark', name });
  }

  protected onBinary(bytes: Buffer): void {
    this.#audio(bytes);
  }

  protected onText(text: string): void {
    const msg = this.parse(text);
    if (msg === undefined) return;
    switch (msg.event) {
      case 'media':
        if (typeof msg.payload !== 'string') return;
        try {
          this.#audio(fromBase64(msg.payload));
        } catch (err) {
          this.error('bad_base64', (err as Error).message);
        }
        return;
      case 'mark':
        this.playout.pushMark(String(msg.name));
        return;
      case 'clear':
        this.record.clears++;
        this.playout.clear();
        return;
      case 'error':
        this.error(String(msg.code), String(msg.message));
        return;
    }
  }

  #audio(bytes: Uint8Array): void {
    this.arrived();
    let n: number;
    try {
      n = samplesIn(this.#codec, bytes.byteLength);
    } catch (err) {
      this.error('odd_length', (err as Error).message);
      return;
    }
    const pcm = new Int16Array(n);
    decodeInto(this.#codec, bytes, pcm);
    this.playout.pushAudio(pcm);
  }
}

/** The voice API provider's own media stream, as the bridge's `/v1/media` takes it. */
export const defaultTwin: ProviderTwin = {
  decl: defaultProvider,
  rates: [8000, 16000],
  codecs: ['slin', 'pcmu', 'pcma'],
  wireCodec: 'slin',
  chunkMs: 20,
  create: (o, defaults) =>
    new DefaultLeg(
      o,
      defaults ?? {
        codecName: o.codec ?? 'slin',
        outputRate: o.rate,
        encoding: 'binary',
        chunkBytes: bytesForMs(o.codec ?? 'slin', o.rate, 20),
      },
    ),
};
