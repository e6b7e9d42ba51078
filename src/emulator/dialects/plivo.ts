/**
 * Plivo bidirectional `<Stream>`: `start` first (no `connected`), then `media` with base64 µ-law 8 kHz
 * or L16 at 8 or 16 kHz (the stream's `contentType`). Toward the caller: `playAudio` carries its own
 * `contentType` and `sampleRate`; `checkpoint` comes back as `playedStream` once the audio before it
 * played; `clearAudio` empties the buffer and answers `clearedAudio` (checkpoints it took are not
 * reported played). Auth: Plivo signs no WebSocket upgrade; an operator's header may be configured.
 */

import { randomUUID } from 'node:crypto';
import { decodeInto, encodeInto, fromBase64, toBase64 } from '../../audio/codec.js';
import type { Codec } from '../../audio/format.js';
import { plivoProvider } from '../../dialects/provider/plivo.js';
import { obj, pcmFromLe, pcmToLe, WsLeg } from './base.js';
import type { LegOptions, ProviderTwin } from './types.js';

export class PlivoLeg extends WsLeg {
  readonly dialect = 'plivo' as const;
  readonly chunkMs = 20;
  readonly #codec: Codec;
  readonly #streamId = randomUUID();
  #seq = 0;
  #chunk = 0;

  constructor(o: LegOptions) {
    const codec = o.codec ?? 'pcmu';
    if (codec === 'pcma') throw new Error('the plivo emulator speaks audio/x-mulaw or audio/x-l16');
    const rate = codec === 'pcmu' ? 8000 : o.rate;
    if (rate !== 8000 && rate !== 16000) throw new Error(`plivo L16 rate must be 8000 or 16000, got ${rate}`);
    super(o, rate);
    this.#codec = codec;
  }

  get #contentType(): string {
    return this.#codec === 'pcmu' ? 'audio/x-mulaw' : 'audio/x-l16';
  }

  protected override headers(): Record<string, string> {
    const h = this.o.auth?.header;
    return h === undefined ? {} : { [h.name]: h.value };
  }

  protected handshake(): void {
    this.sendJson({
      event: 'start',
      sequenceNumber: this.#seq++,
      start: {
        callId: this.o.callId,
        streamId: this.#streamId,
        accountId: 'MA' + randomUUID().replaceAll('-', '').slice(0, 18).toUpperCase(),
        tracks: ['inbound'],
        mediaFormat: { encoding: this.#contentType, sampleRate: this.rate },
      },
      extra_headers: JSON.stringify({ ...this.o.customParameters }),
    });
  }

  sendAudio(pcm: Int16Array): void {
    let bytes: Uint8Array;
    if (this.#codec === 'pcmu') {
      bytes = new Uint8Array(pcm.length);
      encodeInto('pcmu', pcm, bytes);
    } else bytes = pcmToLe(pcm);
    this.sendJson({
      event: 'media',
      sequenceNumber: this.#seq++,
      streamId: this.#streamId,
      media: {
        track: 'inbound',
        timestamp: String(Date.now()),
        chunk: ++this.#chunk,
        payload: toBase64(bytes),
      },
    });
  }

  sendDtmf(digit: string): void {
    this.record.dtmfSent++;
    this.sendJson({
      event: 'dtmf',
      sequenceNumber: this.#seq++,
      streamId: this.#streamId,
      dtmf: { track: 'inbound', digit, timestamp: String(Date.now()) },
    });
  }

  protected ackMark(name: string, how: 'played' | 'cleared'): void {
    if (how === 'played')
      this.sendJson({ event: 'playedStream', sequenceNumber: this.#seq++, streamId: this.#streamId, name });
  }

  protected onBinary(bytes: Buffer): void {
    this.breach(
      'binary_frame',
      `a binary frame of ${bytes.byteLength} bytes; Plivo takes JSON text`,
      'dropped',
    );
  }

  protected onText(text: string): void {
    const msg = this.parse(text);
    if (msg === undefined) return;
    if (msg.streamId !== undefined && msg.streamId !== this.#streamId) {
      this.breach(
        'stream_id',
        `${String(msg.event)} names stream ${JSON.stringify(msg.streamId)}`,
        'dropped',
      );
      return;
    }
    switch (msg.event) {
      case 'playAudio':
        this.#play(obj(msg.media));
        return;
      case 'checkpoint':
        if (typeof msg.name !== 'string')
          this.breach('checkpoint_name', 'checkpoint without name', 'dropped');
        else this.playout.pushMark(msg.name);
        return;
      case 'clearAudio':
        this.record.clears++;
        this.playout.clear();
        this.sendJson({ event: 'clearedAudio', sequenceNumber: this.#seq++, streamId: this.#streamId });
        return;
      case 'sendDTMF':
        return;
      default:
        this.breach('unknown_event', `event ${JSON.stringify(msg.event)}`, 'ignored');
    }
  }

  #play(media: Record<string, unknown> | undefined): void {
    const type = media?.contentType;
    const rate = media?.sampleRate;
    const payload = media?.payload;
    const l16 = type === 'audio/x-l16';
    if (!(l16 || type === 'audio/x-mulaw') || !(rate === 8000 || (l16 && rate === 16000))) {
      this.breach(
        'play_format',
        `playAudio ${JSON.stringify(type)} at ${JSON.stringify(rate)}; Plivo takes audio/x-l16 at 8000 or 16000, audio/x-mulaw at 8000`,
        'dropped',
      );
      return;
    }
    if (rate !== this.rate) {
      // Plivo would resample; the emulator plays at the stream's rate only, so it says so.
      this.breach(
        'play_rate',
        `playAudio at ${rate} Hz on a ${this.rate} Hz stream (not emulated)`,
        'dropped',
      );
      return;
    }
    let bytes: Uint8Array;
    try {
      if (typeof payload !== 'string') throw new Error();
      bytes = fromBase64(payload);
    } catch {
      this.breach('media_payload', 'playAudio media.payload missing or not base64', 'dropped');
      return;
    }
    this.arrived();
    if (l16) {
      if (bytes.byteLength & 1) {
        this.breach(
          'media_payload',
          `L16 payload of ${bytes.byteLength} bytes is not whole samples`,
          'dropped',
        );
        return;
      }
      this.playout.pushAudio(pcmFromLe(bytes));
    } else {
      const pcm = new Int16Array(bytes.byteLength);
      decodeInto('pcmu', bytes, pcm);
      this.playout.pushAudio(pcm);
    }
  }
}

/** The emulated platform of the `plivo` dialect. */
export const plivoTwin: ProviderTwin = {
  decl: plivoProvider,
  rates: [8000, 16000],
  // µ-law is 8 kHz only; L16 may be 8 or 16 kHz.
  fixedRate: (codec) => ((codec ?? 'pcmu') !== 'slin' ? 8000 : undefined),
  codecs: ['pcmu', 'slin'],
  wireCodec: 'pcmu',
  chunkMs: 20,
  flags: { header: true },
  create: (o) => new PlivoLeg(o),
};
