/**
 * jambonz `listen` with streaming playback (`bidirectionalAudio.streaming`): the upgrade asks for the
 * subprotocol `audio.jambonz.org` and carries HTTP Basic when `wsAuth` is set; the first frame is text
 * with the call's attributes, `sampleRate` and `mixType`, and the verb's `metadata` merged in (as the
 * feature server builds it); then binary L16 at that rate. Toward the
 * caller: binary L16 at the same rate (odd byte counts dropped); `mark` comes back as
 * `{"type":"mark","data":{"name","event":"playout"}}` once the audio before it played; `clearMarks`
 * and `killAudio` (which also empties the buffer) send pending marks back with `"event":"cleared"`; at
 * most 30 marks may be pending, more are dropped. `disconnect` ends the call. DTMF goes to the app as
 * `{"event":"dtmf","dtmf","duration"}` (`passDtmf`).
 */
import { randomUUID } from 'node:crypto';
import { jambonzProvider } from '../../dialects/provider/jambonz.js';
import { basicAuth, obj, pcmFromLe, pcmToLe, WsLeg } from './base.js';
import type { LegOptions, ProviderTwin } from './types.js';

export const JAMBONZ_SUBPROTOCOL = 'audio.jambonz.org';
const MAX_MARKS = 30;
const RATES = [8000, 16000, 24000, 48000, 64000];

export class JambonzLeg extends WsLeg {
  readonly dialect = 'jambonz' as const;
  readonly chunkMs = 20;

  constructor(o: LegOptions) {
    if (!RATES.includes(o.rate))
      throw new Error(`jambonz sampleRate must be one of ${RATES.join(', ')}, got ${o.rate}`);
    super(o, o.rate);
  }

  protected override protocols(): string[] {
    return [JAMBONZ_SUBPROTOCOL];
  }

  protected override headers(): Record<string, string> {
    const a = this.o.auth;
    return a?.username === undefined ? {} : { authorization: basicAuth(a.username, a.password ?? '') };
  }

  protected handshake(): void {
    if (this.ws?.protocol !== JAMBONZ_SUBPROTOCOL) {
      this.breach(
        'subprotocol',
        `the bridge answered subprotocol ${JSON.stringify(this.ws?.protocol)}`,
        'closed',
      );
      this.drop();
      return;
    }
    this.sendJson({
      callSid: this.o.callId,
      direction: this.o.direction,
      from: this.o.from,
      to: this.o.to,
      callId: randomUUID(),
      accountSid: randomUUID(),
      applicationSid: randomUUID(),
      sampleRate: this.rate,
      mixType: 'mono',
      // The listen's `metadata` is merged into the frame itself, over the call's attributes.
      ...this.o.customParameters,
    });
  }

  sendAudio(pcm: Int16Array): void {
    this.send(pcmToLe(pcm));
  }

  sendDtmf(digit: string, durationMs = 250): void {
    this.record.dtmfSent++;
    this.sendJson({ event: 'dtmf', dtmf: digit, duration: String(durationMs) });
  }

  protected ackMark(name: string, how: 'played' | 'cleared'): void {
    this.sendJson({ type: 'mark', data: { name, event: how === 'played' ? 'playout' : 'cleared' } });
  }

  protected onBinary(bytes: Buffer): void {
    this.arrived();
    if (bytes.byteLength & 1) {
      this.breach(
        'odd_length',
        `binary audio of ${bytes.byteLength} bytes is not whole L16 samples`,
        'dropped',
      );
      return;
    }
    this.playout.pushAudio(pcmFromLe(bytes));
  }

  protected onText(text: string): void {
    const msg = this.parse(text);
    if (msg === undefined) return;
    switch (msg.type) {
      case 'mark': {
        const name = obj(msg.data)?.name;
        if (typeof name !== 'string') this.breach('mark_name', 'mark without data.name', 'dropped');
        else if (this.playout.pendingMarks >= MAX_MARKS)
          this.breach('too_many_marks', `more than ${MAX_MARKS} marks pending`, 'dropped');
        else this.playout.pushMark(name);
        return;
      }
      case 'clearMarks':
        this.playout.clearMarks();
        return;
      case 'killAudio':
        this.record.clears++;
        this.playout.clear();
        return;
      case 'disconnect':
        this.ws?.close(1000);
        return;
      case 'playAudio':
        this.breach(
          'play_audio',
          'playAudio on a streaming listen: jambonz plays only streamed binary audio',
          'ignored',
        );
        return;
      default:
        this.breach('unknown_type', `type ${JSON.stringify(msg.type)}`, 'ignored');
    }
  }
}

/** The emulated platform of the `jambonz` dialect. */
export const jambonzTwin: ProviderTwin = {
  decl: jambonzProvider,
  rates: [8000, 16000, 24000, 48000, 64000],
  wireCodec: 'slin',
  chunkMs: 20,
  flags: { basic: true },
  create: (o) => new JambonzLeg(o),
};
