/**
 * Asterisk `chan_websocket` (Asterisk 20.16, 21.11, 22.6, 23.0 and later), Asterisk dialing the bridge
 * through a `websocket_client.conf` client whose `uri` is `wss://…/v1/media/asterisk[/tenant]`.
 *
 *   in:   `MEDIA_START` first, as plain text (`MEDIA_START connection_id:… channel:… channel_id:…
 *         format:ulaw optimal_frame_size:160 ptime:20`) or JSON (`{"event":"MEDIA_START",…}`); then
 *         binary frames of the channel's codec; `DTMF_END`, `MEDIA_XOFF`, `MEDIA_XON`,
 *         `MEDIA_MARK_PROCESSED`, and notices the call has no use for (`STATUS`, `QUEUE_DRAINED`, …)
 *   out:  binary frames of exactly `optimal_frame_size` bytes (a whole frame each: Asterisk drops the
 *         bytes of a partial one), paced at real time; nothing between `MEDIA_XOFF` and `MEDIA_XON`
 *         (Asterisk drops what comes then); `MARK_MEDIA <id>` behind the audio; `FLUSH_MEDIA` then a
 *         mark of the bridge's own for barge-in; `HANGUP` when the bot hangs up
 *
 * Commands go in the form `MEDIA_START` came in (plain text or JSON), as the channel's control format
 * is one setting for both directions. Control is case-sensitive.
 *
 * Marks: each `MARK_MEDIA` carries a correlation id of the bridge's own (`m<n>`: a bot's mark names may
 * repeat or hold spaces, which a plain-text command cannot carry); `MEDIA_MARK_PROCESSED` comes back once
 * the audio before it reached the front of Asterisk's queue. `FLUSH_MEDIA` drops queued marks without a
 * word, so the bridge follows it with a mark of its own (`flush-<n>`): when that comes back the flush has
 * happened, and the marks it took are reported to the bot (as Twilio reports marks on `clear`).
 *
 * The call's id is `channel_id` (releases whose MEDIA_START has none: `connection_id`); the caller's
 * number and direction come from the JSON form's `channel_variables` (`customer_phone` or `from`,
 * `direction`) where the dialplan sets them.
 *
 * Auth: Asterisk signs nothing; its websocket client sends HTTP Basic when the client config has
 * `username` and `password`, checked against the tenant's `provider_auth.asterisk` ({username,
 * password}), or for tenant `default` ASTERISK_WS_USERNAME and ASTERISK_WS_PASSWORD (provider-auth.ts).
 */

import type { Codec } from '../../audio/format.js';
import { BridgeError, describe } from '../../errors.js';
import { resolveFormat, type SessionFormat } from '../format.js';
import { noCredential, providerCredential } from './provider-auth.js';
import type { CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';
import { checkBasic, DTMF_DIGITS, evenL16, type Obj } from './wire-json.js';

/** The largest message Asterisk's websocket takes; a larger one closes the socket and hangs up. */
export const ASTERISK_MAX_MESSAGE = 65_500;

const FORMATS: Readonly<Record<string, { codec: Codec; rate: 8000 | 16000 }>> = {
  ulaw: { codec: 'pcmu', rate: 8000 },
  alaw: { codec: 'pcma', rate: 8000 },
  slin: { codec: 'slin', rate: 8000 },
  slin16: { codec: 'slin', rate: 16000 },
};

/** Marks sent and not yet processed, or reported on a flush: forgotten past this many. */
const MAX_PENDING = 1024;

/** A control message: its name and its fields (plain `key:value` words, or the JSON object's). */
interface Control {
  readonly name: string;
  readonly fields: Obj;
  /** A plain-text message's words without a `key:`, in order (`MEDIA_MARK_PROCESSED <id>`). */
  readonly words: readonly string[];
}

function parseControl(data: Buffer): Control {
  const text = data.toString('utf8').trim();
  if (text.startsWith('{')) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw new BridgeError('bad_json', 'a control message starting with { is not valid JSON');
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      throw new BridgeError('bad_json', 'a JSON control message must be an object');
    const o = v as Obj;
    if (typeof o.event !== 'string' || o.event === '')
      throw new BridgeError('invalid_field', `event must be a non-empty string, got ${describe(o.event)}`, {
        field: 'event',
      });
    return { name: o.event, fields: o, words: [] };
  }
  const [name = '', ...rest] = text.split(/\s+/);
  const fields: Obj = {};
  const words: string[] = [];
  for (const w of rest) {
    const colon = w.indexOf(':');
    if (colon > 0) fields[w.slice(0, colon)] = w.slice(colon + 1);
    else words.push(w);
  }
  return { name, fields, words };
}

function text(o: Obj, key: string): string | undefined {
  const v = o[key];
  if (typeof v === 'number') return String(v);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function positiveInt(v: unknown, field: string): number | undefined {
  if (v === undefined) return undefined;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0)
    throw new BridgeError(
      'bad_session_start',
      `${field} must be a positive whole number, got ${describe(v)}`,
    );
  return n;
}

class AsteriskWire implements ProviderWire {
  #json = false;
  #codec: Codec = 'pcmu';
  #rate: 8000 | 16000 = 8000;
  #frameBytes = 160;
  #seq = 0;
  /** Marks sent and not yet processed, by correlation id. */
  #pending = new Map<string, string>();
  /** Marks a flush took, by the flush mark that reports them. */
  #flushed = new Map<string, Map<string, string>>();
  readonly #audio: { kind: 'audio'; audio: Uint8Array } = { kind: 'audio', audio: new Uint8Array(0) };

  start(data: Buffer, isBinary: boolean): CallStart {
    if (isBinary)
      throw new BridgeError(
        'bad_session_start',
        'the stream must begin with the MEDIA_START text message, got a binary frame',
      );
    let c: Control;
    try {
      c = parseControl(data);
    } catch (err) {
      throw new BridgeError('bad_session_start', `not a valid MEDIA_START: ${(err as Error).message}`);
    }
    if (c.name !== 'MEDIA_START')
      throw new BridgeError(
        'bad_session_start',
        `the stream must begin with MEDIA_START (case-sensitive), got ${describe(c.name.slice(0, 40))}`,
      );
    this.#json = data.toString('utf8').trimStart().startsWith('{');
    const f = c.fields;
    const format = text(f, 'format');
    const known = format === undefined ? undefined : FORMATS[format];
    if (known === undefined)
      throw new BridgeError(
        'bad_session_start',
        `format must be one of ${Object.keys(FORMATS).join(', ')} (set c(ulaw) or the like in the dial string), got ${describe(format)}`,
      );
    this.#codec = known.codec;
    this.#rate = known.rate;
    const bytesPerSample = known.codec === 'slin' ? 2 : 1;
    const frame =
      positiveInt(f.optimal_frame_size, 'optimal_frame_size') ?? (known.rate / 50) * bytesPerSample;
    if (frame % bytesPerSample !== 0 || frame > ASTERISK_MAX_MESSAGE)
      throw new BridgeError(
        'bad_session_start',
        `optimal_frame_size must be whole samples of ${format} and at most ${ASTERISK_MAX_MESSAGE} bytes, got ${frame}`,
      );
    this.#frameBytes = frame;
    positiveInt(f.ptime, 'ptime');
    const id = text(f, 'channel_id') ?? text(f, 'connection_id');
    if (id === undefined || id.length > 128)
      throw new BridgeError(
        'bad_session_start',
        `MEDIA_START must carry channel_id (or connection_id) of 1 to 128 characters, got ${describe(f.channel_id)}`,
      );
    const vars = f.channel_variables;
    const v = vars !== null && typeof vars === 'object' && !Array.isArray(vars) ? (vars as Obj) : {};
    const phone = text(v, 'customer_phone') ?? text(v, 'from');
    const direction = v.direction;
    return {
      session_id: id,
      customer_phone: phone,
      direction: direction === 'inbound' || direction === 'outbound' ? direction : undefined,
      started_at: undefined,
    };
  }

  /** One outbound message is one frame of `optimal_frame_size` bytes: always a whole multiple of it. */
  format(): SessionFormat {
    return resolveFormat(
      { codec: this.#codec, sample_rate: this.#rate, encoding: 'binary', chunk_bytes: this.#frameBytes },
      undefined,
    );
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    if (isBinary) {
      this.#audio.audio = this.#codec === 'slin' ? evenL16(data) : data;
      return this.#audio;
    }
    const c = parseControl(data);
    switch (c.name) {
      case 'DTMF_END': {
        const digit = text(c.fields, 'digit') ?? c.words[0];
        if (digit === undefined || !DTMF_DIGITS.test(digit))
          throw new BridgeError(
            'invalid_field',
            `digit must be one of 0-9, *, #, A-D, got ${describe(digit)}`,
            {
              field: 'digit',
            },
          );
        return { kind: 'dtmf', digit: digit.toUpperCase() };
      }
      case 'MEDIA_XOFF':
        return { kind: 'flow', paused: true };
      case 'MEDIA_XON':
        return { kind: 'flow', paused: false };
      case 'MEDIA_MARK_PROCESSED':
        return this.#processed(text(c.fields, 'correlation_id') ?? c.words[0]);
      case 'HANGUP':
      case 'MEDIA_END':
        return { kind: 'end', reason: 'provider' };
      case 'MEDIA_START':
      case 'STATUS':
      case 'MEDIA_BUFFERING_COMPLETED':
      case 'QUEUE_DRAINED':
        return { kind: 'none' };
      default:
        throw new BridgeError(
          'unknown_event',
          `a control message must be one of MEDIA_START, DTMF_END, MEDIA_XOFF, MEDIA_XON, MEDIA_MARK_PROCESSED, STATUS, MEDIA_BUFFERING_COMPLETED or QUEUE_DRAINED (case-sensitive), got ${describe(c.name.slice(0, 40))}`,
        );
    }
  }

  #processed(id: string | undefined): CallFrame {
    if (id === undefined)
      throw new BridgeError('invalid_field', 'MEDIA_MARK_PROCESSED must carry correlation_id', {
        field: 'correlation_id',
      });
    const name = this.#pending.get(id);
    if (name !== undefined) {
      this.#pending.delete(id);
      // Processed before the flush that would have taken it: played, and not reported again.
      for (const taken of this.#flushed.values()) taken.delete(id);
      return { kind: 'played', name };
    }
    const taken = this.#flushed.get(id);
    if (taken !== undefined) {
      this.#flushed.delete(id);
      return taken.size === 0 ? { kind: 'none' } : { kind: 'cleared', names: [...taken.values()] };
    }
    // A mark this connection did not send (or one already reported): nothing for the bot.
    return { kind: 'none' };
  }

  #command(command: string, id?: string): string {
    if (this.#json) return JSON.stringify(id === undefined ? { command } : { command, correlation_id: id });
    return id === undefined ? command : `${command} ${id}`;
  }

  readonly textAudio = false;

  /** Never called: Asterisk's media is binary. */
  audioText(): string {
    throw new Error('Asterisk media goes as binary frames');
  }

  markFrame(name: string): string {
    const id = `m${++this.#seq}`;
    if (this.#pending.size >= MAX_PENDING) this.#pending.delete(this.#pending.keys().next().value!);
    this.#pending.set(id, name);
    return this.#command('MARK_MEDIA', id);
  }

  /** `FLUSH_MEDIA`, then a mark of the bridge's own that reports the marks the flush took. */
  clearFrame(): readonly string[] {
    const id = `flush-${++this.#seq}`;
    this.#flushed.set(id, this.#pending);
    this.#pending = new Map();
    while (this.#flushed.size > MAX_PENDING) this.#flushed.delete(this.#flushed.keys().next().value!);
    return [this.#command('FLUSH_MEDIA'), this.#command('MARK_MEDIA', id)];
  }

  /** chan_websocket has no command to play a digit. */
  dtmfFrame(): undefined {
    return undefined;
  }

  /** Asterisk has no error notice toward the channel: a bad frame is logged and counted only. */
  errorFrame(): undefined {
    return undefined;
  }

  hangupFrame(): string {
    return this.#command('HANGUP');
  }
}

export const asteriskDialect: ProviderDialect = {
  name: 'asterisk',
  async authenticate(req, _url, tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant, exp: undefined };
    const creds = await providerCredential(ctx, tenant, 'asterisk');
    if (creds?.username === undefined || creds.password === undefined) throw noCredential('asterisk', tenant);
    checkBasic(req, creds.username, creds.password, 'Asterisk websocket client');
    return { tenant, exp: undefined };
  },
  connect: () => new AsteriskWire(),
};
