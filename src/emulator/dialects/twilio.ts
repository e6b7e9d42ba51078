/**
 * Twilio Media Streams, bidirectional (`<Connect><Stream>`), also SignalWire's and Fonoster's: the upgrade
 * carries `X-Twilio-Signature` (HMAC-SHA1 of the URL keyed by the auth token), then text `connected` and
 * `start`, then JSON `media` with base64 µ-law 8 kHz, string sequence numbers, chunks and timestamps.
 * Toward the caller: `media` of any size is buffered and played in order at real time; a `mark` comes
 * back once the audio before it played; `clear` empties the buffer and sends back every pending mark.
 * Messages naming another stream are dropped.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { decodeInto, encodeInto, fromBase64, toBase64 } from '../../audio/codec.js';
import type { Codec } from '../../audio/format.js';
import { twilioProvider } from '../../dialects/provider/twilio.js';
import { obj, WsLeg } from './base.js';
import type { LegOptions, ProviderTwin } from './types.js';

/** Twilio's request signature: base64 HMAC-SHA1 over the URL and the sorted POST parameters. */
export function twilioSignature(authToken: string, url: string, params: Record<string, string> = {}): string {
  let data = url;
  for (const key of Object.keys(params).sort()) data += key + params[key];
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

export function sid(prefix: string): string {
  return prefix + randomBytes(16).toString('hex');
}

export class TwilioLeg extends WsLeg {
  readonly dialect: 'twilio' | 'telnyx' | 'exotel' = 'twilio';
  readonly chunkMs: number = 20;
  protected readonly streamId = sid('MZ');
  protected readonly accountSid = sid('AC');
  protected codec: Codec = 'pcmu';
  protected seq = 0;
  protected chunk = 0;

  constructor(o: LegOptions, rate = 8000) {
    super(o, rate);
  }

  protected override headers(): Record<string, string> {
    const token = this.o.auth?.token;
    // Twilio streams only to wss:// URLs and signs the URL as the TwiML named it; an emulated call on
    // plain ws:// (development, behind no TLS) signs the wss:// form the bridge reconstructs.
    const signed = this.o.url.replace(/^ws:/, 'wss:');
    return token === undefined ? {} : { 'x-twilio-signature': twilioSignature(token, signed) };
  }

  protected handshake(): void {
    this.sendJson({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    this.sendJson({
      event: 'start',
      sequenceNumber: this.nextSeq(),
      start: {
        accountSid: this.accountSid,
        streamSid: this.streamId,
        callSid: this.o.callId,
        tracks: ['inbound'],
        customParameters: { ...this.o.customParameters },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
      streamSid: this.streamId,
    });
  }

  protected nextSeq(): string {
    return String(++this.seq);
  }

  sendAudio(pcm: Int16Array): void {
    const bytes = new Uint8Array(pcm.length);
    encodeInto(this.codec, pcm, bytes);
    this.chunk++;
    this.emitMedia(JSON.stringify(this.mediaMessage(toBase64(bytes))));
  }

  /** Sends one caller media message (Telnyx may reorder them). */
  protected emitMedia(text: string): void {
    this.send(text);
  }

  protected mediaMessage(payload: string): unknown {
    return {
      event: 'media',
      sequenceNumber: this.nextSeq(),
      media: {
        track: 'inbound',
        chunk: String(this.chunk),
        timestamp: String((this.chunk - 1) * this.chunkMs),
        payload,
      },
      streamSid: this.streamId,
    };
  }

  sendDtmf(digit: string): void {
    this.record.dtmfSent++;
    this.sendJson({
      event: 'dtmf',
      streamSid: this.streamId,
      sequenceNumber: this.nextSeq(),
      dtmf: { track: 'inbound_track', digit },
    });
  }

  protected override farewell(): void {
    this.sendJson({
      event: 'stop',
      sequenceNumber: this.nextSeq(),
      streamSid: this.streamId,
      stop: { accountSid: this.accountSid, callSid: this.o.callId },
    });
  }

  protected ackMark(name: string): void {
    // Twilio sends a mark back the same way whether it played or a clear took it.
    this.sendJson({
      event: 'mark',
      sequenceNumber: this.nextSeq(),
      streamSid: this.streamId,
      mark: { name },
    });
  }

  /** The stream id field of the bridge's messages on this platform. */
  protected streamIdOf(msg: Record<string, unknown>): unknown {
    return msg.streamSid;
  }

  /** Whether a message is for this stream (Twilio routes by `streamSid`: it must be there). */
  protected sameStream(msg: Record<string, unknown>): boolean {
    return this.streamIdOf(msg) === this.streamId;
  }

  protected onBinary(bytes: Buffer): void {
    this.breach(
      'binary_frame',
      `a binary frame of ${bytes.byteLength} bytes; this platform takes JSON text`,
      'dropped',
    );
  }

  protected onText(text: string): void {
    const msg = this.parse(text);
    if (msg === undefined) return;
    if (!this.sameStream(msg)) {
      this.breach(
        'stream_id',
        `${String(msg.event)} names stream ${JSON.stringify(this.streamIdOf(msg))}`,
        'dropped',
      );
      return;
    }
    switch (msg.event) {
      case 'media':
        this.onMedia(msg);
        return;
      case 'mark': {
        const name = obj(msg.mark)?.name;
        if (typeof name !== 'string') {
          this.breach('mark_name', 'mark without mark.name', 'dropped');
          return;
        }
        this.playout.pushMark(name);
        return;
      }
      case 'clear':
        this.record.clears++;
        this.playout.clear();
        return;
      default:
        this.breach('unknown_event', `event ${JSON.stringify(msg.event)}`, 'ignored');
    }
  }

  protected onMedia(msg: Record<string, unknown>): void {
    const payload = obj(msg.media)?.payload;
    if (typeof payload !== 'string') {
      this.breach('media_payload', 'media without media.payload', 'dropped');
      return;
    }
    let bytes: Uint8Array;
    try {
      bytes = fromBase64(payload);
    } catch {
      this.breach('media_payload', 'media.payload is not base64', 'dropped');
      return;
    }
    this.arrived();
    if (!this.acceptSize(bytes.byteLength)) return;
    const pcm = new Int16Array(bytes.byteLength);
    decodeInto(this.codec, bytes, pcm);
    this.playout.pushAudio(pcm);
  }

  /** Twilio takes audio of any size. */
  protected acceptSize(_bytes: number): boolean {
    return true;
  }
}

/** The emulated platform of the `twilio` dialect. */
export const twilioTwin: ProviderTwin = {
  decl: twilioProvider,
  rates: [8000],
  fixedRate: () => 8000,
  wireCodec: 'pcmu',
  chunkMs: 20,
  flags: { authToken: "Twilio's auth token (signs the URL)" },
  create: (o) => new TwilioLeg(o),
};
