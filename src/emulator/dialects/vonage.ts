/**
 * Vonage Voice API `websocket` endpoint: the first frame is text `websocket:connected` with the
 * `content-type` (`audio/l16;rate=8000|16000|24000`) and the NCCO's headers flattened beside it; then
 * binary L16, 20 ms a message. Toward the caller: every binary message must be exactly 20 ms (320 B at
 * 8 kHz, 640 B at 16 kHz, 960 B at 24 kHz): any other size ends the call at once (the bridge sees 1006);
 * at most 3,072 messages (about 60 s) are buffered, more are dropped. `{"action":"clear"}` empties the
 * buffer and answers `websocket:cleared`; `{"action":"notify"}` comes back as `websocket:notify` with
 * its payload once the audio before it played. DTMF is `websocket:dtmf`. Vonage has no auth of its own
 * on the upgrade; an operator's header may be configured.
 */

import { vonageProvider } from '../../dialects/provider/vonage.js';
import { pcmFromLe, pcmToLe, WsLeg } from './base.js';
import type { LegOptions, ProviderTwin } from './types.js';

/** Vonage's buffer, in 20 ms messages. */
const MAX_QUEUED_MESSAGES = 3_072;

export class VonageLeg extends WsLeg {
  readonly dialect = 'vonage' as const;
  readonly chunkMs = 20;
  readonly #frameBytes: number;
  readonly #notes = new Map<string, unknown>();
  #notes_seq = 0;

  constructor(o: LegOptions) {
    if (o.rate !== 8000 && o.rate !== 16000 && o.rate !== 24000)
      throw new Error(`vonage rate must be 8000, 16000 or 24000, got ${o.rate}`);
    super(o, o.rate);
    this.#frameBytes = (o.rate / 50) * 2;
  }

  protected override headers(): Record<string, string> {
    const h = this.o.auth?.header;
    return h === undefined ? {} : { [h.name]: h.value };
  }

  protected handshake(): void {
    this.sendJson({
      event: 'websocket:connected',
      'content-type': `audio/l16;rate=${this.rate}`,
      uuid: this.o.callId,
      from: this.o.from,
      to: this.o.to,
      ...this.o.customParameters,
    });
  }

  sendAudio(pcm: Int16Array): void {
    this.send(pcmToLe(pcm));
  }

  sendDtmf(digit: string, durationMs = 260): void {
    this.record.dtmfSent++;
    this.sendJson({ event: 'websocket:dtmf', digit, duration: durationMs });
  }

  protected ackMark(name: string, how: 'played' | 'cleared'): void {
    const payload = this.#notes.get(name);
    this.#notes.delete(name);
    if (how === 'played') this.sendJson({ event: 'websocket:notify', payload });
  }

  protected onBinary(bytes: Buffer): void {
    this.arrived();
    if (bytes.byteLength !== this.#frameBytes) {
      this.breach(
        'frame_size',
        `unexpected frame size ${bytes.byteLength}, when required ${this.#frameBytes}`,
        'closed',
      );
      this.drop();
      return;
    }
    if (this.playout.queuedMs / 20 >= MAX_QUEUED_MESSAGES) {
      this.breach('buffer_full', `more than ${MAX_QUEUED_MESSAGES} messages buffered`, 'dropped');
      return;
    }
    this.playout.pushAudio(pcmFromLe(bytes));
  }

  protected onText(text: string): void {
    const msg = this.parse(text);
    if (msg === undefined) return;
    switch (msg.action) {
      case 'clear':
        this.record.clears++;
        this.playout.clear();
        this.sendJson({ event: 'websocket:cleared' });
        return;
      case 'notify': {
        const key = `notify-${++this.#notes_seq}`;
        this.#notes.set(key, msg.payload);
        this.playout.pushMark(key);
        return;
      }
      default:
        this.breach('unknown_action', `action ${JSON.stringify(msg.action)}`, 'ignored');
    }
  }
}

/** The emulated platform of the `vonage` dialect. */
export const vonageTwin: ProviderTwin = {
  decl: vonageProvider,
  rates: [16000, 8000, 24000],
  wireCodec: 'slin',
  chunkMs: 20,
  flags: { header: true },
  create: (o) => new VonageLeg(o),
};
