/**
 * Twilio Media Streams, bidirectional (`<Connect><Stream url="wss://…/v1/media/twilio[/tenant]">`), and
 * the platforms that speak it (SignalWire, Fonoster).
 *
 *   in:   `connected`, `start` (streamSid, callSid, customParameters, mediaFormat µ-law 8000), `media`
 *         (base64 µ-law, track inbound), `dtmf`, `mark` (played), `stop`
 *   out:  `media` (base64 µ-law 8 kHz; any size, played in order), `mark`, `clear` (Twilio then sends
 *         back every mark still pending)
 *
 * Auth: `X-Twilio-Signature` on the upgrade, HMAC-SHA1 of the URL Twilio requested keyed by the
 * account's auth token (the tenant's `provider_auth.twilio.auth_token`; TWILIO_AUTH_TOKEN for tenant
 * `default`), compared in constant time. The call's id is its `callSid`; the caller's number and
 * the direction come from `<Parameter>`s (`from` or `customer_phone`, and `direction`), as Twilio puts no
 * number in the stream itself.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { fromBase64 } from '../../audio/codec.js';
import { BridgeError, describe } from '../../errors.js';
import { resolveFormat, type SessionFormat } from '../format.js';
import { noCredential, providerCredential } from './provider-auth.js';
import type { AudioTextAround, CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';
import {
  badStart,
  callStart,
  type Obj,
  objField,
  parseJson,
  readStart,
  streamEvent,
  strField,
} from './wire-json.js';

/** The µ-law 8 kHz call format, 20 ms chunks in JSON `media` events. */
export function twilioFormat(): SessionFormat {
  return resolveFormat({ codec: 'pcmu', sample_rate: 8000, encoding: 'base64', chunk_bytes: 160 }, undefined);
}

/** Twilio's `media` message to a stream, around its base64 payload. */
function mediaAround(streamSid: string): AudioTextAround {
  return {
    head: `{"event":"media","streamSid":${JSON.stringify(streamSid)},"media":{"payload":"`,
    tail: '"}}',
  };
}

class TwilioWire implements ProviderWire {
  #streamSid = '';
  /** The `media` message around its payload, for this stream. */
  #around: AudioTextAround = mediaAround('');

  start(data: Buffer, isBinary: boolean): CallStart | undefined {
    return readStart('Twilio', () => {
      const o = parseJson(data, isBinary, 'Twilio Media Streams');
      if (o.event === 'connected') return undefined;
      if (o.event !== 'start')
        throw badStart(`the stream must begin with connected and start, got ${describe(o.event)}`);
      const start = objField(o, 'start');
      this.#streamSid = strField(start, 'streamSid', 'start.streamSid');
      this.#around = mediaAround(this.#streamSid);
      const callSid = strField(start, 'callSid', 'start.callSid');
      const format = start.mediaFormat as Obj | undefined;
      if (format !== undefined && (format.encoding !== 'audio/x-mulaw' || format.sampleRate !== 8000))
        throw badStart(
          `start.mediaFormat must be audio/x-mulaw at 8000 Hz, got ${describe(format.encoding)} at ${describe(format.sampleRate)}`,
        );
      const params = (start.customParameters ?? {}) as Obj;
      return callStart(callSid, params.customer_phone ?? params.from ?? params.From, params.direction);
    });
  }

  format(): SessionFormat {
    return twilioFormat();
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    const o = parseJson(data, isBinary, 'Twilio Media Streams');
    if (o.event !== 'media') return streamEvent(o);
    const media = objField(o, 'media');
    if (media.track !== undefined && media.track !== 'inbound') return { kind: 'none' };
    return { kind: 'audio', audio: fromBase64(strField(media, 'payload', 'media.payload')) };
  }

  readonly textAudio = true;

  audioText(chunk: Buffer): string {
    return `${this.#around.head}${chunk.toString('base64')}${this.#around.tail}`;
  }

  audioTextAround(): AudioTextAround {
    return this.#around;
  }

  markFrame(name: string): string {
    return JSON.stringify({ event: 'mark', streamSid: this.#streamSid, mark: { name } });
  }

  clearFrame(): string {
    return JSON.stringify({ event: 'clear', streamSid: this.#streamSid });
  }

  /** Twilio plays no digits into a stream. */
  dtmfFrame(): undefined {
    return undefined;
  }

  /** Twilio has no error event: a bad frame is logged and counted only. */
  errorFrame(): undefined {
    return undefined;
  }

  /** A bidirectional stream ends by closing the socket (Twilio then runs the TwiML after `<Connect>`). */
  hangupFrame(): undefined {
    return undefined;
  }
}

/** Twilio's request signature: base64 HMAC-SHA1 of the URL (a WebSocket upgrade has no POST body). */
export function twilioSignature(authToken: string, url: string): string {
  return createHmac('sha1', authToken).update(url).digest('base64');
}

/** The URLs Twilio may have signed for this request: wss:// as configured, ws:// behind a TLS proxy. */
function signedUrls(req: IncomingMessage): string[] {
  const host = req.headers.host ?? '';
  return [`wss://${host}${req.url ?? ''}`, `ws://${host}${req.url ?? ''}`];
}

export const twilioDialect: ProviderDialect = {
  name: 'twilio',
  async authenticate(req, _url, tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant, exp: undefined };
    const token = (await providerCredential(ctx, tenant, 'twilio'))?.auth_token;
    if (token === undefined) throw noCredential('twilio', tenant);
    const given = req.headers['x-twilio-signature'];
    if (typeof given !== 'string' || given === '')
      throw new BridgeError('unauthorized', 'the upgrade has no X-Twilio-Signature header');
    const got = Buffer.from(given);
    for (const url of signedUrls(req)) {
      const want = Buffer.from(twilioSignature(token, url));
      if (want.length === got.length && timingSafeEqual(want, got)) return { tenant, exp: undefined };
    }
    throw new BridgeError('unauthorized', 'X-Twilio-Signature does not match this URL and the auth token');
  },
  connect: () => new TwilioWire(),
};
