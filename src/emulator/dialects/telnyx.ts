/**
 * Telnyx media streaming, RTP mode: the upgrade carries `x-telnyx-streaming-auth-token` when a stream
 * auth token is configured (and `connected` repeats it), then `start` with `media_format`, then `media`
 * with the base64 RTP payload (PCMU or PCMA at 8 kHz). Telnyx does not promise order: with
 * `settings.reorder` the emulator swaps each pair of chunks, so the bridge must order by `chunk` and
 * `sequence_number`. Toward the caller: each `media` must hold 20 ms to 30 s of audio (else dropped);
 * `mark` comes back after the audio before it played, or at once when none is queued; `clear` sends the
 * queued marks back. The bridge's messages need not name the stream; one naming another is dropped.
 */
import { randomUUID } from 'node:crypto';
import type { Codec } from '../../audio/format.js';
import { telnyxProvider } from '../../dialects/provider/telnyx.js';
import { sid, TwilioLeg } from './twilio.js';
import type { LegOptions, ProviderTwin } from './types.js';

const MIN_MS = 20;
const MAX_MS = 30_000;

export class TelnyxLeg extends TwilioLeg {
  override readonly dialect = 'telnyx' as const;
  protected override readonly streamId = randomUUID();
  readonly #callControlId = this.o.callId;
  #held: string | undefined;

  constructor(o: LegOptions) {
    super(o);
    const codec: Codec = o.codec ?? 'pcmu';
    if (codec === 'slin') throw new Error('the telnyx emulator speaks PCMU or PCMA');
    this.codec = codec;
  }

  protected override headers(): Record<string, string> {
    const token = this.o.auth?.token;
    return token === undefined ? {} : { 'x-telnyx-streaming-auth-token': token };
  }

  protected override handshake(): void {
    const token = this.o.auth?.token;
    this.sendJson({
      event: 'connected',
      version: '1.0.0',
      ...(token === undefined ? {} : { 'x-telnyx-streaming-auth-token': token }),
    });
    this.sendJson({
      event: 'start',
      sequence_number: this.nextSeq(),
      start: {
        user_id: randomUUID(),
        call_control_id: this.#callControlId,
        call_session_id: randomUUID(),
        from: this.o.from,
        to: this.o.to,
        tags: [],
        client_state: null,
        custom_parameters: { ...this.o.customParameters },
        media_format: { encoding: this.codec === 'pcmu' ? 'PCMU' : 'PCMA', sample_rate: 8000, channels: 1 },
      },
      stream_id: this.streamId,
    });
  }

  protected override emitMedia(text: string): void {
    if (this.o.settings?.reorder !== true) {
      this.send(text);
      return;
    }
    // Out of order, as Telnyx may deliver: chunk 2k+1 goes out after chunk 2k+2.
    if (this.#held === undefined) this.#held = text;
    else {
      this.send(text);
      this.send(this.#held);
      this.#held = undefined;
    }
  }

  protected override mediaMessage(payload: string): unknown {
    return {
      event: 'media',
      sequence_number: this.nextSeq(),
      media: {
        track: 'inbound',
        chunk: String(this.chunk),
        timestamp: String((this.chunk - 1) * this.chunkMs),
        payload,
      },
      stream_id: this.streamId,
    };
  }

  override sendDtmf(digit: string): void {
    this.record.dtmfSent++;
    this.sendJson({
      event: 'dtmf',
      sequence_number: this.nextSeq(),
      stream_id: this.streamId,
      dtmf: { digit },
    });
  }

  protected override farewell(): void {
    if (this.#held !== undefined) this.send(this.#held);
    this.sendJson({
      event: 'stop',
      sequence_number: this.nextSeq(),
      stop: { user_id: sid(''), call_control_id: this.#callControlId },
      stream_id: this.streamId,
    });
  }

  protected override ackMark(name: string): void {
    this.sendJson({
      event: 'mark',
      sequence_number: this.nextSeq(),
      stream_id: this.streamId,
      mark: { name },
    });
  }

  protected override streamIdOf(msg: Record<string, unknown>): unknown {
    return msg.stream_id;
  }

  protected override sameStream(msg: Record<string, unknown>): boolean {
    return msg.stream_id === undefined || msg.stream_id === this.streamId;
  }

  protected override acceptSize(bytes: number): boolean {
    const ms = bytes / 8;
    if (ms >= MIN_MS && ms <= MAX_MS) return true;
    this.breach(
      'media_duration',
      `media of ${ms} ms; Telnyx takes ${MIN_MS} ms to ${MAX_MS / 1000} s`,
      'dropped',
    );
    return false;
  }
}

/** The emulated platform of the `telnyx` dialect. */
export const telnyxTwin: ProviderTwin = {
  decl: telnyxProvider,
  rates: [8000],
  fixedRate: () => 8000,
  codecs: ['pcmu', 'pcma'],
  wireCodec: 'pcmu',
  chunkMs: 20,
  flags: { authToken: "Telnyx's stream token" },
  create: (o) => new TelnyxLeg(o),
};
