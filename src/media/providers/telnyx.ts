/**
 * Telnyx media streaming, bidirectional RTP mode (`stream_url` = `wss://…/v1/media/telnyx[/tenant]`,
 * `stream_bidirectional_mode: "rtp"`).
 *
 *   in:   `connected`, `start` (stream_id, start.call_control_id, from, to, custom_parameters,
 *         media_format {encoding, sample_rate}), `media` (base64 RTP payload, media.chunk), `dtmf`,
 *         `mark` (played, or returned by a clear), `error`, `stop`
 *   out:  `media` (base64, 20 ms per message: Telnyx drops messages under 20 ms), `mark`, `clear`
 *
 * Telnyx does not promise the order of media frames: they are put back in `media.chunk` order here,
 * a frame ahead of a missing one held until the gap fills, or for at most REORDER_WINDOW frames (the
 * missing one is then taken as lost); a frame arriving after its place was passed is dropped.
 *
 * Codecs: PCMU and PCMA at 8 kHz, and L16 (network byte order, as RTP carries it) at 8 or 16 kHz; the
 * bridge answers in the codec and rate of `media_format`, so `stream_bidirectional_codec` (and the
 * sampling rate) must match the stream's. Auth: the stream auth token in the upgrade's
 * `x-telnyx-streaming-auth-token` header, compared in constant time. The call's id is its
 * `call_control_id`; the caller's number is `start.from`; the direction comes from a custom parameter
 * `direction`, where set.
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
  evenL16,
  type Obj,
  objField,
  parseJson,
  readStart,
  sameSecret,
  streamEvent,
  strField,
} from './wire-json.js';

/** Frames held ahead of a missing one before it counts as lost (100 ms of 20 ms frames). */
export const REORDER_WINDOW = 5;

const ENCODINGS: Readonly<Record<string, Codec>> = { PCMU: 'pcmu', PCMA: 'pcma', L16: 'slin' };

/** Telnyx's `media` message, around its base64 payload. */
const TELNYX_AROUND: AudioTextAround = { head: '{"event":"media","media":{"payload":"', tail: '"}}' };

class TelnyxWire implements ProviderWire {
  #codec: Codec = 'pcmu';
  #rate: TelephonyRate = 8000;
  /** The next chunk in order, and those that came ahead of it. */
  #next = 1;
  readonly #held = new Map<number, Uint8Array>();
  /** L16 goes out big-endian: swapped into this first. */
  #swap: Buffer | undefined;

  start(data: Buffer, isBinary: boolean): CallStart | undefined {
    return readStart('Telnyx', () => {
      const o = parseJson(data, isBinary, 'Telnyx media streaming');
      if (o.event === 'connected') return undefined;
      if (o.event !== 'start')
        throw badStart(`the stream must begin with connected and start, got ${describe(o.event)}`);
      const start = objField(o, 'start');
      const callControlId = strField(start, 'call_control_id', 'start.call_control_id');
      this.#format(start.media_format);
      const params = (start.custom_parameters ?? {}) as Obj;
      return callStart(callControlId, start.from ?? params.customer_phone ?? params.from, params.direction);
    });
  }

  #format(mf: unknown): void {
    if (mf === undefined) return; // PCMU at 8 kHz, Telnyx's default
    if (mf === null || typeof mf !== 'object')
      throw badStart(`start.media_format must be an object, got ${describe(mf)}`);
    const { encoding, sample_rate: rate } = mf as Obj;
    const codec = typeof encoding === 'string' ? ENCODINGS[encoding.toUpperCase()] : undefined;
    if (codec === undefined)
      throw badStart(
        `start.media_format.encoding must be PCMU, PCMA or L16 (set stream_bidirectional_codec to one of them), got ${describe(encoding)}`,
      );
    const rates = codec === 'slin' ? [8000, 16000] : [8000];
    const r = rate ?? 8000;
    if (typeof r !== 'number' || !rates.includes(r))
      throw badStart(
        `start.media_format.sample_rate must be ${rates.join(' or ')} for ${describe(encoding)}, got ${describe(rate)}`,
      );
    this.#codec = codec;
    this.#rate = r as TelephonyRate;
  }

  format(): SessionFormat {
    const bytes = this.#codec === 'slin' ? this.#rate / 25 : this.#rate / 50;
    return resolveFormat(
      { codec: this.#codec, sample_rate: this.#rate, encoding: 'base64', chunk_bytes: bytes },
      undefined,
    );
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    const o = parseJson(data, isBinary, 'Telnyx media streaming');
    // Telnyx's `error` reports a message of ours it refused: nothing for the call itself.
    if (o.event !== 'media') return streamEvent(o, ['error']);
    const media = objField(o, 'media');
    if (media.track !== undefined && media.track !== 'inbound') return { kind: 'none' };
    const audio = fromBase64(strField(media, 'payload', 'media.payload'));
    if (this.#codec === 'slin') (evenL16(audio) as Buffer).swap16();
    const chunk = Number(media.chunk);
    if (media.chunk === undefined || !Number.isSafeInteger(chunk)) return { kind: 'audio', audio };
    const ordered = this.#order(chunk, audio);
    return ordered === undefined ? { kind: 'none' } : { kind: 'audio', audio: ordered };
  }

  /** The audio now in order (this chunk and any held behind it), or undefined while a gap is open. */
  #order(chunk: number, audio: Uint8Array): Uint8Array | undefined {
    const held = this.#held;
    if (chunk === this.#next && held.size === 0) {
      this.#next++;
      return audio;
    }
    if (chunk < this.#next) return undefined; // its place has passed (late, or a duplicate)
    held.set(chunk, audio);
    // Too much waits on a missing chunk: it is lost; go on from the earliest held.
    if (held.size > REORDER_WINDOW) this.#next = Math.min(...held.keys());
    const parts: Uint8Array[] = [];
    for (let a = held.get(this.#next); a !== undefined; a = held.get(this.#next)) {
      parts.push(a);
      held.delete(this.#next++);
    }
    if (parts.length === 0) return undefined;
    return parts.length === 1 ? parts[0] : Buffer.concat(parts);
  }

  readonly textAudio = true;

  audioText(chunk: Buffer): string {
    let out = chunk;
    if (this.#codec === 'slin') {
      if (this.#swap?.length !== chunk.length) this.#swap = Buffer.alloc(chunk.length);
      out = this.#swap;
      chunk.copy(out);
      out.swap16();
    }
    return `${TELNYX_AROUND.head}${out.toString('base64')}${TELNYX_AROUND.tail}`;
  }

  /** G.711 goes as it is; L16 is byte-swapped per chunk (big-endian on the wire), so it has none. */
  audioTextAround(): AudioTextAround | undefined {
    return this.#codec === 'slin' ? undefined : TELNYX_AROUND;
  }

  markFrame(name: string): string {
    return JSON.stringify({ event: 'mark', mark: { name } });
  }

  /** Telnyx then sends back the marks it still held. */
  clearFrame(): string {
    return '{"event":"clear"}';
  }

  /** Digits go to a Telnyx call through Call Control (send_dtmf), not the stream. */
  dtmfFrame(): undefined {
    return undefined;
  }

  /** Telnyx takes no error event: a bad frame is logged and counted only. */
  errorFrame(): undefined {
    return undefined;
  }

  /** The stream ends by closing the socket; the call itself is Call Control's to hang up. */
  hangupFrame(): undefined {
    return undefined;
  }
}

export const telnyxDialect: ProviderDialect = {
  name: 'telnyx',
  async authenticate(req, _url, tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant, exp: undefined };
    const want = (await providerCredential(ctx, tenant, 'telnyx'))?.stream_auth_token;
    if (want === undefined) throw noCredential('telnyx', tenant);
    const given = req.headers['x-telnyx-streaming-auth-token'];
    if (typeof given !== 'string' || given === '')
      throw new BridgeError('unauthorized', 'the upgrade has no x-telnyx-streaming-auth-token header');
    if (!sameSecret(given, want))
      throw new BridgeError('unauthorized', 'x-telnyx-streaming-auth-token is not the configured token');
    return { tenant, exp: undefined };
  },
  connect: () => new TelnyxWire(),
};
