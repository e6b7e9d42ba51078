/**
 * Plivo Audio Streams, bidirectional (`<Stream bidirectional="true" keepCallAlive="true">
 * wss://…/v1/media/plivo[/tenant]?token=…</Stream>`).
 *
 *   in:   `start` first (no `connected`: start.callId, streamId, mediaFormat {encoding, sampleRate},
 *         extra_headers), `media` (base64 µ-law 8 kHz or L16 8/16 kHz), `dtmf`, `playedStream` (a
 *         checkpoint reached), `clearedAudio` (the queue emptied)
 *   out:  `playAudio` (contentType, sampleRate, base64 payload; 20 ms a message), `checkpoint`,
 *         `clearAudio`, `sendDTMF`
 *
 * Plivo reports no checkpoint that a `clearAudio` took: the wire keeps the names of the checkpoints not
 * yet reported, and on `clearedAudio` hands back those queued before the clear (`cleared`), so the bot
 * learns of every mark once, as it does of Twilio's returned marks.
 *
 * Auth: Plivo signs no stream, so a token of the operator's choosing is required, in the stream URL as
 * `?token=` or as `Authorization: Bearer`, compared in constant time. The call's id is `start.callId`;
 * the caller's number and the direction come from `extraHeaders` (`from` or `customer_phone`, and
 * `direction`), as the stream itself carries neither.
 */
import { fromBase64 } from '../../audio/codec.js';
import type { Codec, TelephonyRate } from '../../audio/format.js';
import { BridgeError, describe } from '../../errors.js';
import { resolveFormat, type SessionFormat } from '../format.js';
import { noCredential, providerCredential } from './provider-auth.js';
import type { AudioTextAround, CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';
import {
  badStart,
  callStart,
  digitField,
  type Obj,
  objField,
  parseJson,
  readStart,
  sameSecret,
  strField,
} from './wire-json.js';

const PLATFORM = 'Plivo audio streams';

/** `extra_headers` as Plivo passes it: an object, its JSON, or `key=value` pairs. */
function extraHeaders(v: unknown): Obj {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Obj;
  if (typeof v !== 'string' || v === '') return {};
  try {
    const o: unknown = JSON.parse(v);
    if (o !== null && typeof o === 'object' && !Array.isArray(o)) return o as Obj;
  } catch {
    // not JSON: key=value pairs
  }
  const out: Obj = {};
  for (const pair of v.split(/[,;]/)) {
    const at = pair.indexOf('=');
    if (at > 0) out[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return out;
}

class PlivoWire implements ProviderWire {
  #streamId = '';
  #codec: Codec = 'pcmu';
  #rate: TelephonyRate = 8000;
  #head = '';
  /** Checkpoints sent (or queued to be) and not yet reported, in order. */
  #pending: string[] = [];
  /** For each clearAudio not yet answered, the checkpoints it took. */
  readonly #clears: string[][] = [];

  start(data: Buffer, isBinary: boolean): CallStart {
    return readStart('Plivo', () => {
      const o = parseJson(data, isBinary, PLATFORM);
      if (o.event !== 'start') throw badStart(`the stream must begin with start, got ${describe(o.event)}`);
      const start = objField(o, 'start');
      const callId = strField(start, 'callId', 'start.callId');
      this.#streamId = strField(start, 'streamId', 'start.streamId');
      this.#format(start.mediaFormat);
      const headers = extraHeaders(o.extra_headers);
      return callStart(callId, headers.from ?? headers.customer_phone ?? headers.From, headers.direction);
    });
  }

  #format(mf: unknown): void {
    if (mf === null || typeof mf !== 'object')
      throw badStart(`start.mediaFormat must be an object, got ${describe(mf)}`);
    const { encoding, sampleRate } = mf as Obj;
    // `audio/x-l16;rate=16000` as the XML writes it, or the type alone with sampleRate beside it.
    const [type, param] = typeof encoding === 'string' ? encoding.split(';') : [];
    const rate = sampleRate ?? (param?.startsWith('rate=') ? Number(param.slice(5)) : 8000);
    if (type === 'audio/x-mulaw' && rate === 8000) this.#codec = 'pcmu';
    else if (type === 'audio/x-l16' && (rate === 8000 || rate === 16000)) this.#codec = 'slin';
    else
      throw badStart(
        `start.mediaFormat must be audio/x-mulaw at 8000 Hz or audio/x-l16 at 8000 or 16000 Hz, got ${describe(encoding)} at ${describe(sampleRate)}`,
      );
    this.#rate = rate as TelephonyRate;
    const contentType = this.#codec === 'pcmu' ? 'audio/x-mulaw' : 'audio/x-l16';
    this.#head = `{"event":"playAudio","media":{"contentType":"${contentType}","sampleRate":${this.#rate},"payload":"`;
  }

  format(): SessionFormat {
    const bytes = this.#codec === 'slin' ? this.#rate / 25 : this.#rate / 50;
    return resolveFormat(
      { codec: this.#codec, sample_rate: this.#rate, encoding: 'base64', chunk_bytes: bytes },
      undefined,
    );
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    const o = parseJson(data, isBinary, PLATFORM);
    switch (o.event) {
      case 'media': {
        const media = objField(o, 'media');
        if (media.track !== undefined && media.track !== 'inbound') return { kind: 'none' };
        const audio = fromBase64(strField(media, 'payload', 'media.payload'));
        if (this.#codec === 'slin' && (audio.length & 1) !== 0)
          throw new BridgeError(
            'odd_length',
            `L16 audio must be whole 16-bit samples, got ${audio.length} bytes`,
          );
        return { kind: 'audio', audio };
      }
      case 'dtmf':
        return { kind: 'dtmf', digit: digitField(objField(o, 'dtmf').digit, 'dtmf.digit') };
      case 'playedStream': {
        const name = strField(o, 'name');
        const at = this.#pending.indexOf(name);
        // Not pending: a clear took it and the bot has been told already.
        if (at < 0) return { kind: 'none' };
        this.#pending.splice(at, 1);
        return { kind: 'played', name };
      }
      case 'clearedAudio': {
        const names = this.#clears.shift() ?? [];
        return names.length === 0 ? { kind: 'none' } : { kind: 'cleared', names };
      }
      case 'start':
        return { kind: 'none' };
      default:
        throw new BridgeError(
          'unknown_event',
          `event must be one of start, media, dtmf, playedStream or clearedAudio, got ${describe(o.event)}`,
        );
    }
  }

  readonly textAudio = true;

  audioText(chunk: Buffer): string {
    return `${this.#head}${chunk.toString('base64')}"}}`;
  }

  audioTextAround(): AudioTextAround {
    return { head: this.#head, tail: '"}}' };
  }

  markFrame(name: string): string {
    this.#pending.push(name);
    return JSON.stringify({ event: 'checkpoint', streamId: this.#streamId, name });
  }

  /** Every checkpoint not yet reported is Plivo's to drop now, or will reach it with nothing before it. */
  clearFrame(): string {
    this.#clears.push(this.#pending);
    this.#pending = [];
    return `{"event":"clearAudio","streamId":"${this.#streamId}"}`;
  }

  dtmfFrame(digit: string): string {
    return JSON.stringify({ event: 'sendDTMF', dtmf: digit });
  }

  /** Plivo takes no error event: a bad frame is logged and counted only. */
  errorFrame(): undefined {
    return undefined;
  }

  /** The stream ends by closing the socket (Plivo then goes on with the XML after `<Stream>`). */
  hangupFrame(): undefined {
    return undefined;
  }
}

export const plivoDialect: ProviderDialect = {
  name: 'plivo',
  async authenticate(req, url, tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant, exp: undefined };
    const want = (await providerCredential(ctx, tenant, 'plivo'))?.token;
    if (want === undefined) throw noCredential('plivo', tenant);
    const header = req.headers.authorization;
    const m = header === undefined ? null : /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
    const given = m?.[1] ?? url.searchParams.get('token') ?? '';
    if (given === '')
      throw new BridgeError(
        'unauthorized',
        'the upgrade has no token (?token= in the stream URL, or a Bearer)',
      );
    if (!sameSecret(given, want))
      throw new BridgeError('unauthorized', 'the token is not the configured one');
    return { tenant, exp: undefined };
  },
  connect: () => new PlivoWire(),
};
