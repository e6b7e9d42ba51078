/**
 * Vonage Voice API `websocket` endpoint (an NCCO `connect` action to
 * `wss://…/v1/media/vonage[/tenant]`).
 *
 *   in:   text `websocket:connected` (the `content-type` `audio/l16;rate=8000|16000` and the NCCO's
 *         `headers` flattened beside it), then binary L16 20 ms frames, `websocket:dtmf`,
 *         `websocket:notify` (a notify's audio played), `websocket:cleared`
 *   out:  binary L16, exactly 20 ms a message (320 B at 8 kHz, 640 B at 16 kHz: Vonage closes the call on
 *         any other size), `{"action":"notify","payload":{"name"}}` behind the audio as a mark,
 *         `{"action":"clear"}`
 *
 * Vonage acknowledges a notify once the audio before it played, but drops the notifies a clear takes
 * without a word: this wire remembers the marks it framed, and on `websocket:cleared` reports those the
 * clear took (the bot learns of them as with Twilio's marks on `clear`). A mark still queued in the bridge
 * at the clear goes to Vonage right after it, and Vonage acks it later: that ack is not passed on twice.
 *
 * Auth: Vonage signs nothing of its own on the upgrade; the NCCO endpoint's `authorization` sets the
 * `Authorization` header, so the bridge takes `Authorization: Bearer <token>` (the tenant's
 * `provider_auth.vonage.token`; VONAGE_STREAM_TOKEN for tenant `default`), and/or only upgrades from the
 * addresses `provider_auth.vonage.allow` lists (403 from any other). The call's id is the `uuid` header the NCCO sets (else one the bridge makes); the caller's
 * number and the direction come from the `from` and `direction` headers.
 */
import { randomUUID } from 'node:crypto';
import { BridgeError, describe } from '../../errors.js';
import { clientAddress, trustFn } from '../../limits/client-address.js';
import { resolveFormat, type SessionFormat } from '../format.js';
import { addressAllowed, noCredential, providerCredential } from './provider-auth.js';
import type { CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';
import {
  authorization,
  callStart,
  digitField,
  evenL16,
  parseJson,
  sameSecret,
  strField,
} from './wire-json.js';

const CONTENT_TYPE = /^audio\/l16;\s*rate=(8000|16000)$/i;

/** Binary L16 at `rate`, 20 ms (and so 320 or 640 bytes) a message. */
export function vonageFormat(rate: 8000 | 16000): SessionFormat {
  return resolveFormat(
    { codec: 'slin', sample_rate: rate, encoding: 'binary', chunk_bytes: rate / 25 },
    undefined,
  );
}

/** Marks reported on a clear whose notify never came (Vonage dropped it): forgotten past this many. */
const MAX_REPORTED = 1024;

class VonageWire implements ProviderWire {
  #rate: 8000 | 16000 = 16000;
  /** Each notify's payload carries a number of its own: a bot's mark names may repeat. */
  #seq = 0;
  /** Marks framed and not yet acknowledged by `websocket:notify`, by number. */
  #pending = new Map<number, string>();
  /** Marks framed before the last clear: Vonage drops them; reported on `websocket:cleared`. */
  #cleared = new Map<number, string>();
  /** Marks reported on `websocket:cleared` whose notify may yet come (they were still queued here). */
  #reported = new Set<number>();
  readonly #audio: { kind: 'audio'; audio: Uint8Array } = { kind: 'audio', audio: new Uint8Array(0) };

  start(data: Buffer, isBinary: boolean): CallStart {
    if (isBinary)
      throw new BridgeError(
        'bad_session_start',
        'the stream must begin with the websocket:connected text event, got a binary frame',
      );
    let o: Record<string, unknown>;
    try {
      o = parseJson(data, false, 'Vonage');
    } catch (err) {
      throw new BridgeError(
        'bad_session_start',
        `not a valid Vonage websocket:connected: ${(err as Error).message}`,
      );
    }
    if (o.event !== 'websocket:connected')
      throw new BridgeError(
        'bad_session_start',
        `the stream must begin with websocket:connected, got ${describe(o.event)}`,
      );
    const ct = o['content-type'];
    const m = typeof ct === 'string' ? CONTENT_TYPE.exec(ct) : null;
    if (m === null)
      throw new BridgeError(
        'bad_session_start',
        `content-type must be audio/l16;rate=8000 or audio/l16;rate=16000, got ${describe(ct)}`,
      );
    this.#rate = m[1] === '8000' ? 8000 : 16000;
    const uuid = o.uuid;
    if (uuid !== undefined && (typeof uuid !== 'string' || uuid === '' || uuid.length > 128))
      throw new BridgeError(
        'bad_session_start',
        `the uuid header must be a string of 1 to 128 characters, got ${describe(uuid)}`,
      );
    return callStart(uuid ?? randomUUID(), o.customer_phone ?? o.from, o.direction);
  }

  format(): SessionFormat {
    return vonageFormat(this.#rate);
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    if (isBinary) {
      this.#audio.audio = evenL16(data);
      return this.#audio;
    }
    const o = parseJson(data, false, 'Vonage');
    switch (o.event) {
      case 'websocket:dtmf':
        return { kind: 'dtmf', digit: digitField(o.digit, 'digit') };
      case 'websocket:notify': {
        const payload = o.payload;
        if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
          throw new BridgeError('invalid_field', `payload must be an object, got ${describe(payload)}`, {
            field: 'payload',
          });
        const p = payload as Record<string, unknown>;
        const name = strField(p, 'name', 'payload.name');
        const seq = p.seq;
        if (typeof seq !== 'number') return { kind: 'played', name };
        if (this.#reported.delete(seq)) return { kind: 'none' };
        this.#pending.delete(seq);
        this.#cleared.delete(seq);
        return { kind: 'played', name };
      }
      case 'websocket:cleared': {
        if (this.#cleared.size === 0) return { kind: 'none' };
        const names = [...this.#cleared.values()];
        for (const seq of this.#cleared.keys()) this.#reported.add(seq);
        this.#cleared.clear();
        for (const seq of this.#reported) {
          if (this.#reported.size <= MAX_REPORTED) break;
          this.#reported.delete(seq);
        }
        return { kind: 'cleared', names };
      }
      case 'websocket:connected':
        return { kind: 'none' };
      default:
        throw new BridgeError(
          'unknown_event',
          `event must be one of websocket:connected, websocket:dtmf, websocket:notify or websocket:cleared, got ${describe(o.event)}`,
        );
    }
  }

  readonly textAudio = false;

  /** Never called: Vonage's audio is binary. */
  audioText(): string {
    throw new Error('Vonage audio goes as binary frames');
  }

  markFrame(name: string): string {
    const seq = ++this.#seq;
    this.#pending.set(seq, name);
    return JSON.stringify({ action: 'notify', payload: { name, seq } });
  }

  clearFrame(): string {
    for (const [seq, name] of this.#pending) this.#cleared.set(seq, name);
    this.#pending.clear();
    return '{"action":"clear"}';
  }

  /** Vonage plays no digits into a websocket. */
  dtmfFrame(): undefined {
    return undefined;
  }

  /** Vonage has no error event: a bad frame is logged and counted only. */
  errorFrame(): undefined {
    return undefined;
  }

  /** The websocket leg ends by closing the socket. */
  hangupFrame(): undefined {
    return undefined;
  }
}

export const vonageDialect: ProviderDialect = {
  name: 'vonage',
  async authenticate(req, _url, tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant, exp: undefined };
    const cred = await providerCredential(ctx, tenant, 'vonage');
    const { token, allow } = cred ?? {};
    if (token === undefined && allow === undefined) throw noCredential('vonage', tenant);
    // With an allowlist, the address is checked first (403), then the token when there is one too.
    if (allow !== undefined && !addressAllowed(clientAddress(req, trustFn(ctx.config.trustProxy)), allow))
      throw new BridgeError(
        'forbidden',
        `the upgrade does not come from an address provider_auth.vonage.allow lists`,
      );
    if (token === undefined) return { tenant, exp: undefined };
    const given = authorization(req, 'Bearer');
    if (given === undefined)
      throw new BridgeError('unauthorized', 'the upgrade has no Authorization: Bearer header');
    if (!sameSecret(given, token))
      throw new BridgeError('unauthorized', 'the Authorization bearer token is not the Vonage stream token');
    return { tenant, exp: undefined };
  },
  connect: () => new VonageWire(),
};
