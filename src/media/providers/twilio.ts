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
import type { CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';

const DIGITS = /^[0-9*#A-Da-d]$/;

type Obj = Record<string, unknown>;

function parse(data: Buffer, isBinary: boolean): Obj {
  if (isBinary)
    throw new BridgeError('unknown_event', 'Twilio Media Streams frames are JSON text, not binary');
  let v: unknown;
  try {
    v = JSON.parse(data.toString('utf8'));
  } catch {
    throw new BridgeError('bad_json', 'a frame is not valid JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new BridgeError('bad_json', 'a frame must be a JSON object');
  return v as Obj;
}

function obj(o: Obj, key: string): Obj {
  const v = o[key];
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new BridgeError('invalid_field', `${key} must be an object, got ${describe(v)}`, { field: key });
  return v as Obj;
}

function str(o: Obj, key: string, field = key): string {
  const v = o[key];
  if (typeof v !== 'string' || v === '')
    throw new BridgeError('invalid_field', `${field} must be a non-empty string, got ${describe(v)}`, {
      field,
    });
  return v;
}

/** The µ-law 8 kHz call format, 20 ms chunks in JSON `media` events. */
export function twilioFormat(): SessionFormat {
  return resolveFormat({ codec: 'pcmu', sample_rate: 8000, encoding: 'base64', chunk_bytes: 160 }, undefined);
}

class TwilioWire implements ProviderWire {
  #streamSid = '';

  start(data: Buffer, isBinary: boolean): CallStart | undefined {
    let o: Obj;
    try {
      o = parse(data, isBinary);
      if (o.event === 'connected') return undefined;
      if (o.event !== 'start')
        throw new BridgeError(
          'bad_session_start',
          `the stream must begin with connected and start, got ${describe(o.event)}`,
        );
      const start = obj(o, 'start');
      this.#streamSid = str(start, 'streamSid', 'start.streamSid');
      const callSid = str(start, 'callSid', 'start.callSid');
      const format = start.mediaFormat as Obj | undefined;
      if (format !== undefined && (format.encoding !== 'audio/x-mulaw' || format.sampleRate !== 8000))
        throw new BridgeError(
          'bad_session_start',
          `start.mediaFormat must be audio/x-mulaw at 8000 Hz, got ${describe(format.encoding)} at ${describe(format.sampleRate)}`,
        );
      const params = (start.customParameters ?? {}) as Obj;
      const phone = params.customer_phone ?? params.from ?? params.From;
      const direction = params.direction;
      return {
        session_id: callSid,
        customer_phone: typeof phone === 'string' ? phone : undefined,
        direction: direction === 'inbound' || direction === 'outbound' ? direction : undefined,
        started_at: undefined,
      };
    } catch (err) {
      if (err instanceof BridgeError && err.code !== 'bad_session_start')
        throw new BridgeError('bad_session_start', `not a valid Twilio start: ${err.message}`);
      throw err;
    }
  }

  format(): SessionFormat {
    return twilioFormat();
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    const o = parse(data, isBinary);
    switch (o.event) {
      case 'media': {
        const media = obj(o, 'media');
        if (media.track !== undefined && media.track !== 'inbound') return { kind: 'none' };
        const payload = str(media, 'payload', 'media.payload');
        return { kind: 'audio', audio: fromBase64(payload) };
      }
      case 'dtmf': {
        const digit = obj(o, 'dtmf').digit;
        if (typeof digit !== 'string' || !DIGITS.test(digit))
          throw new BridgeError(
            'invalid_field',
            `dtmf.digit must be one of 0-9, *, #, A-D, got ${describe(digit)}`,
            {
              field: 'dtmf.digit',
            },
          );
        return { kind: 'dtmf', digit: digit.toUpperCase() };
      }
      case 'mark':
        return { kind: 'played', name: str(obj(o, 'mark'), 'name', 'mark.name') };
      case 'stop':
        return { kind: 'end', reason: 'provider' };
      case 'connected':
      case 'start':
        return { kind: 'none' };
      default:
        throw new BridgeError(
          'unknown_event',
          `event must be one of connected, start, media, dtmf, mark or stop, got ${describe(o.event)}`,
        );
    }
  }

  readonly textAudio = true;

  audioText(chunk: Buffer): string {
    return `{"event":"media","streamSid":"${this.#streamSid}","media":{"payload":"${chunk.toString('base64')}"}}`;
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
    if (token === undefined) throw noCredential('Twilio', 'twilio', tenant, 'TWILIO_AUTH_TOKEN');
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
