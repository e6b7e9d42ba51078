/**
 * jambonz `listen` with streaming playback (`bidirectionalAudio.streaming: true`), on
 * `wss://…/v1/media/jambonz[/tenant]` with the subprotocol `audio.jambonz.org`.
 *
 *   in:   one text frame first: the call's attributes (`callSid`, `from`, `to`, `direction`, …), the
 *         listen's `sampleRate` and `mixType`, and its `metadata`; then binary L16 at `sampleRate`;
 *         `{"event":"dtmf","dtmf","duration"}` (`passDtmf`); `{"type":"mark","data":{"name","event"}}`
 *         with `event` `playout` (the audio before it played) or `cleared` (a `killAudio` or
 *         `clearMarks` dropped it)
 *   out:  binary L16, 20 ms a message, at the bidirectional rate; `{"type":"mark","data":{"name"}}`
 *         behind the audio; `{"type":"killAudio"}` for barge-in; `{"type":"disconnect"}` to hang up
 *
 * The bidirectional rate is the verb's `bidirectionalAudio.sampleRate`, which jambonz does not repeat in
 * the first frame: the bridge takes it from a `bidirectionalAudio` object in that frame (top level or in
 * `metadata`) when there is one, else it is the listen's `sampleRate` (set both the same on the verb).
 * The bridge carries 8 and 16 kHz; other rates are refused at the start with the accepted ones named.
 *
 * A mark reported `cleared` reaches the bot as a mark too, as Twilio's marks on `clear` do: the bot learns
 * that no more of the audio before it will play.
 *
 * Auth: HTTP Basic on the upgrade (the verb's `wsAuth`), checked against the tenant's
 * `provider_auth.jambonz` ({username, password}), or for tenant `default` JAMBONZ_WS_USERNAME and
 * JAMBONZ_WS_PASSWORD (provider-auth.ts).
 */
import { BridgeError, describe } from '../../errors.js';
import { resolveFormat, type SessionFormat } from '../format.js';
import { noCredential, providerCredential } from './provider-auth.js';
import type { CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';
import { checkBasic, digitField, evenL16, type Obj, parseJson, strField } from './wire-json.js';

export const JAMBONZ_SUBPROTOCOL = 'audio.jambonz.org';

type Rate = 8000 | 16000;

/** Binary L16 in at `inRate`, out at `outRate`, 20 ms a message. */
export function jambonzFormat(inRate: Rate, outRate: Rate): SessionFormat {
  return resolveFormat(
    {
      codec: 'slin',
      sample_rate: inRate,
      output_sample_rate: outRate,
      encoding: 'binary',
      chunk_bytes: outRate / 25,
    },
    undefined,
  );
}

function rateOf(v: unknown, field: string): Rate {
  const n = typeof v === 'string' ? Number(v) : v;
  if (n === 8000 || n === 16000) return n;
  throw new BridgeError(
    'bad_session_start',
    `${field} must be 8000 or 16000 (the rates the bridge carries), got ${describe(v)}`,
  );
}

function objOrUndefined(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

class JambonzWire implements ProviderWire {
  #inRate: Rate = 8000;
  #outRate: Rate = 8000;
  readonly #audio: { kind: 'audio'; audio: Uint8Array } = { kind: 'audio', audio: new Uint8Array(0) };

  start(data: Buffer, isBinary: boolean): CallStart {
    if (isBinary)
      throw new BridgeError(
        'bad_session_start',
        'the stream must begin with the listen metadata text frame, got a binary frame',
      );
    let o: Obj;
    try {
      o = parseJson(data, false, 'jambonz');
    } catch (err) {
      throw new BridgeError(
        'bad_session_start',
        `not a valid jambonz metadata frame: ${(err as Error).message}`,
      );
    }
    let callSid: string;
    try {
      callSid = strField(o, 'callSid');
    } catch (err) {
      throw new BridgeError('bad_session_start', (err as Error).message);
    }
    if (callSid.length > 128)
      throw new BridgeError(
        'bad_session_start',
        `callSid must be at most 128 characters, got ${callSid.length}`,
      );
    const mix = o.mixType ?? 'mono';
    if (mix !== 'mono' && mix !== 'mixed')
      throw new BridgeError(
        'bad_session_start',
        `mixType must be mono or mixed (one channel), got ${describe(mix)}`,
      );
    this.#inRate = o.sampleRate === undefined ? 8000 : rateOf(o.sampleRate, 'sampleRate');
    const meta = objOrUndefined(o.metadata);
    const bidi = objOrUndefined(o.bidirectionalAudio) ?? objOrUndefined(meta?.bidirectionalAudio);
    const outRate = bidi?.sampleRate;
    this.#outRate =
      outRate === undefined || outRate === 0
        ? this.#inRate
        : rateOf(outRate, 'bidirectionalAudio.sampleRate');
    const phone = o.from;
    const direction = o.direction;
    return {
      session_id: callSid,
      customer_phone: typeof phone === 'string' && phone !== '' ? phone : undefined,
      direction: direction === 'inbound' || direction === 'outbound' ? direction : undefined,
      started_at: undefined,
    };
  }

  format(): SessionFormat {
    return jambonzFormat(this.#inRate, this.#outRate);
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    if (isBinary) {
      this.#audio.audio = evenL16(data);
      return this.#audio;
    }
    const o = parseJson(data, false, 'jambonz');
    if (o.event === 'dtmf') return { kind: 'dtmf', digit: digitField(o.dtmf, 'dtmf') };
    if (o.type === 'mark') {
      const d = objOrUndefined(o.data);
      if (d === undefined)
        throw new BridgeError('invalid_field', `data must be an object, got ${describe(o.data)}`, {
          field: 'data',
        });
      const name = strField(d, 'name', 'data.name');
      if (d.event !== 'playout' && d.event !== 'cleared')
        throw new BridgeError(
          'invalid_field',
          `data.event must be playout or cleared, got ${describe(d.event)}`,
          { field: 'data.event' },
        );
      return { kind: 'played', name };
    }
    // jambonz's other notices (a play's `playDone`, …) say nothing the call needs.
    if (typeof o.type === 'string') return { kind: 'none' };
    throw new BridgeError(
      'unknown_event',
      `a jambonz text frame must be a dtmf event or have a type (mark, …), got event ${describe(o.event)}`,
    );
  }

  readonly textAudio = false;

  /** Never called: jambonz's streamed audio is binary. */
  audioText(): string {
    throw new Error('jambonz audio goes as binary frames');
  }

  markFrame(name: string): string {
    return JSON.stringify({ type: 'mark', data: { name } });
  }

  /** Stops playback and empties jambonz's buffer; jambonz reports the marks it held as `cleared`. */
  clearFrame(): string {
    return '{"type":"killAudio"}';
  }

  /** A listen plays no digits. */
  dtmfFrame(): undefined {
    return undefined;
  }

  /** jambonz has no error notice toward the call: a bad frame is logged and counted only. */
  errorFrame(): undefined {
    return undefined;
  }

  hangupFrame(): string {
    return '{"type":"disconnect"}';
  }
}

export const jambonzDialect: ProviderDialect = {
  name: 'jambonz',
  subprotocol: JAMBONZ_SUBPROTOCOL,
  async authenticate(req, _url, tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant, exp: undefined };
    const creds = await providerCredential(ctx, tenant, 'jambonz');
    if (creds?.username === undefined || creds.password === undefined) throw noCredential('jambonz', tenant);
    checkBasic(req, creds.username, creds.password, 'jambonz listen (wsAuth)');
    return { tenant, exp: undefined };
  },
  connect: () => new JambonzWire(),
};
