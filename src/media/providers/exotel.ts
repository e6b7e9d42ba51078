/**
 * Exotel Voicebot applet, bidirectional (`wss://USER:PASSWORD@…/v1/media/exotel[/tenant]`).
 *
 *   in:   `connected`, `start` (stream_sid, call_sid, from, to, custom_parameters, media_format
 *         audio/x-raw at 8000 or 16000), `media` (base64 slin 16-bit LE), `dtmf`, `mark` (played), `stop`
 *   out:  `media` (base64 slin; each chunk 3,200 bytes: Exotel takes 3.2 KB to 100 KB in multiples of
 *         320 B and leaves a gap after any other size; the end of the bot's audio is padded to a whole
 *         chunk with silence once it pauses 250 ms), `mark`, `clear` (Exotel then sends back the
 *         pending marks)
 *
 * Auth: HTTP Basic on the upgrade (Exotel turns the URL's `USER:PASSWORD@` into it), checked against
 * the tenant's `provider_auth.exotel` {username, password} (EXOTEL_STREAM_USER and EXOTEL_STREAM_PASSWORD
 * for tenant `default`). The call's id is `call_sid`; the
 * caller's number is `from`, the direction a custom parameter `direction` when the applet sets one.
 */
import { fromBase64 } from '../../audio/codec.js';
import { BridgeError, describe } from '../../errors.js';
import { resolveFormat, type SessionFormat } from '../format.js';
import { noCredential, providerCredential } from './provider-auth.js';
import type { CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';
import {
  authorization,
  badStart,
  callStart,
  evenL16,
  type Obj,
  objField,
  parseJson,
  readStart,
  sameSecret,
  streamEvent,
  strField,
} from './wire-json.js';

/** Exotel's smallest chunk, a multiple of its 320 B: 200 ms at 8 kHz, 100 ms at 16 kHz. */
const CHUNK_BYTES = 3_200;

/**
 * A pause in the bot's audio after which the partial chunk held back leaves padded with silence: up to
 * 200 ms of what the bot said would otherwise wait for it to speak again. Longer than the pauses of a bot
 * still talking: Exotel sends the caller's audio in 100 ms media, so a bot answering in step with it
 * pauses 100 ms between pieces, and one streaming in real time sends at least a chunk (200 ms at most)
 * at a time; padding inside those would put silence into the middle of its speech.
 */
const IDLE_FLUSH_MS = 250;

/** Base64 slin at `rate` in `media` events of 3,200 bytes. */
export function exotelFormat(rate: 8000 | 16000): SessionFormat {
  return resolveFormat(
    { codec: 'slin', sample_rate: rate, encoding: 'base64', chunk_bytes: CHUNK_BYTES },
    undefined,
  );
}

class ExotelWire implements ProviderWire {
  #streamSid = '';
  #rate: 8000 | 16000 = 8000;
  #seq = 0;
  #chunk = 0;
  /** Audio sent so far, ms (the outbound `media.timestamp`). */
  #sentMs = 0;
  #chunkMs = 200;

  start(data: Buffer, isBinary: boolean): CallStart | undefined {
    return readStart('Exotel', () => {
      const o = parseJson(data, isBinary, 'Exotel');
      if (o.event === 'connected') return undefined;
      if (o.event !== 'start')
        throw badStart(`the stream must begin with connected and start, got ${describe(o.event)}`);
      const start = objField(o, 'start');
      this.#streamSid = strField(start, 'stream_sid', 'start.stream_sid');
      const callSid = strField(start, 'call_sid', 'start.call_sid');
      const format = start.media_format as Obj | undefined;
      const rate = format?.sample_rate === undefined ? '8000' : String(format.sample_rate);
      if (rate !== '8000' && rate !== '16000')
        throw badStart(
          `start.media_format.sample_rate must be 8000 or 16000, got ${describe(format?.sample_rate)}`,
        );
      if (format?.encoding !== undefined && format.encoding !== 'audio/x-raw')
        throw badStart(`start.media_format.encoding must be audio/x-raw, got ${describe(format.encoding)}`);
      this.#rate = rate === '8000' ? 8000 : 16000;
      this.#chunkMs = (CHUNK_BYTES / 2 / this.#rate) * 1000;
      const params = (start.custom_parameters ?? {}) as Obj;
      return callStart(callSid, start.from ?? params.customer_phone, params.direction);
    });
  }

  format(): SessionFormat {
    return exotelFormat(this.#rate);
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    const o = parseJson(data, isBinary, 'Exotel');
    if (o.event !== 'media') return streamEvent(o);
    const payload = strField(objField(o, 'media'), 'payload', 'media.payload');
    return { kind: 'audio', audio: evenL16(fromBase64(payload)) };
  }

  readonly textAudio = true;
  readonly idleFlushMs = IDLE_FLUSH_MS;

  /** With `sequence_number`, `chunk` and `timestamp`, as Exotel's own media events have them. */
  audioText(chunk: Buffer): string {
    const ts = Math.round(this.#sentMs);
    this.#sentMs += this.#chunkMs;
    return `{"event":"media","sequence_number":${++this.#seq},"stream_sid":"${this.#streamSid}","media":{"chunk":${++this.#chunk},"timestamp":"${ts}","payload":"${chunk.toString('base64')}"}}`;
  }

  markFrame(name: string): string {
    return JSON.stringify({
      event: 'mark',
      sequence_number: ++this.#seq,
      stream_sid: this.#streamSid,
      mark: { name },
    });
  }

  clearFrame(): string {
    return JSON.stringify({ event: 'clear', sequence_number: ++this.#seq, stream_sid: this.#streamSid });
  }

  /** Exotel plays no digits into a stream. */
  dtmfFrame(): undefined {
    return undefined;
  }

  /** Exotel has no error event: a bad frame is logged and counted only. */
  errorFrame(): undefined {
    return undefined;
  }

  /** The stream ends by closing the socket (the applet then moves on in the call flow). */
  hangupFrame(): undefined {
    return undefined;
  }
}

export const exotelDialect: ProviderDialect = {
  name: 'exotel',
  async authenticate(req, _url, tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant, exp: undefined };
    const cred = await providerCredential(ctx, tenant, 'exotel');
    const user = cred?.username;
    const password = cred?.password;
    if (user === undefined || password === undefined) throw noCredential('exotel', tenant);
    const given = authorization(req, 'Basic');
    if (given === undefined)
      throw new BridgeError('unauthorized', 'the upgrade has no Authorization: Basic header');
    const pair = Buffer.from(given, 'base64').toString('utf8');
    // Both compared, whichever differs: no hint of which one was wrong.
    const userOk = sameSecret(pair.slice(0, Math.max(0, pair.indexOf(':'))), user);
    const passwordOk = sameSecret(pair.slice(pair.indexOf(':') + 1), password);
    if (pair.indexOf(':') < 0 || !userOk || !passwordOk)
      throw new BridgeError('unauthorized', 'the Basic credentials are not the Exotel stream credentials');
    return { tenant, exp: undefined };
  },
  connect: () => new ExotelWire(),
};
