/**
 * The default dialect: the voice API provider's own media stream on `/v1/media` (docs/protocol.md). A
 * media token (a JWT signed with the tenant's media secret) before the upgrade; `session_start` first,
 * then binary audio frames or base64 `media` events, `dtmf`, `mark` (played), `session_end`; toward the
 * provider, audio in exactly `chunk_bytes` pieces (binary, or `media` events in base64 encoding), `mark`,
 * `clear`, `dtmf`, `error` and `session_end` events.
 */
import { fromBase64 } from '../../audio/codec.js';
import { DEFAULT_TENANT, verifyMediaToken } from '../../auth/jwt.js';
import { BridgeError } from '../../errors.js';
import type { MediaStreamConfig } from '../../state/types.js';
import { resolveFormat, type SessionFormat } from '../format.js';
import {
  COMPACT_MEDIA_HEAD,
  compactMediaPayload,
  errorFrame,
  type MediaOverrides,
  parseProviderEvent,
  parseSessionStart,
} from '../protocol.js';
import type { AudioTextAround, CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';

/** Our `media` event to the provider, around its base64 payload. */
const MEDIA_AROUND: AudioTextAround = { head: '{"event":"media","payload":"', tail: '"}' };

function oddLength(bytes: number): BridgeError {
  return new BridgeError(
    'odd_length',
    `slin audio must be whole 16-bit samples (an even byte count), got ${bytes} bytes`,
  );
}

export class DefaultWire implements ProviderWire {
  #media: MediaOverrides | undefined;
  #format: SessionFormat | undefined;
  /**
   * What a binary frame needs of the format, read once it is known: binary audio is accepted, and it
   * must be whole samples (slin). The per-chunk check then reads this object only.
   */
  #binaryAudio = false;
  #base64Audio = false;
  #slin = false;
  /** Audio of base64 media events decoded here, reused chunk after chunk (see #compactAudio). */
  #decoded = Buffer.alloc(0);
  /** The last view of `#decoded` handed out: the same chunk size over and over makes no new one. */
  #decodedView = new Uint8Array(0);
  /** The audio frame handed back, refilled each time: no object per chunk on the hot path. */
  readonly #audio: { kind: 'audio'; audio: Uint8Array } = { kind: 'audio', audio: new Uint8Array(0) };

  start(data: Buffer, isBinary: boolean): CallStart {
    if (isBinary) {
      throw new BridgeError(
        'bad_session_start',
        'the first frame must be a session_start event (a JSON text frame), got a binary frame',
      );
    }
    const ev = parseSessionStart(data.toString('utf8'));
    this.#media = ev.media;
    return ev;
  }

  format(stored: MediaStreamConfig | undefined): SessionFormat {
    this.#format = resolveFormat(this.#media, stored);
    this.#known(this.#format);
    return this.#format;
  }

  /** A wire for a call whose format is already known (tests of the outbound writer, benches). */
  static of(format: SessionFormat): DefaultWire {
    const w = new DefaultWire();
    w.#format = format;
    w.#known(format);
    return w;
  }

  #known(format: SessionFormat): void {
    this.#binaryAudio = format.encoding === 'binary';
    this.#base64Audio = format.encoding === 'base64';
    this.#slin = format.codec === 'slin';
  }

  frame(data: Buffer, isBinary: boolean): CallFrame {
    if (isBinary) {
      if (!this.#binaryAudio) {
        throw new BridgeError(
          'invalid_field',
          `this session's encoding is ${this.#format!.encoding}: audio comes as media events, not binary frames`,
          { field: 'encoding' },
        );
      }
      if (this.#slin && (data.length & 1) !== 0) throw oddLength(data.length);
      this.#audio.audio = data;
      return this.#audio;
    }
    if (this.#base64Audio) {
      const audio = this.#compactAudio(data);
      if (audio !== undefined) {
        this.#audio.audio = audio;
        return this.#audio;
      }
    }
    const f = this.#format!;
    const ev = parseProviderEvent(data.toString('utf8'));
    switch (ev.event) {
      case 'media': {
        const audio = fromBase64(ev.payload);
        if (f.codec === 'slin' && (audio.length & 1) !== 0) throw oddLength(audio.length);
        if (f.encoding !== 'base64') {
          throw new BridgeError(
            'invalid_field',
            `this session's encoding is ${f.encoding}: audio comes as binary frames; media events are for base64 encoding only`,
            { field: 'encoding' },
          );
        }
        return { kind: 'audio', audio };
      }
      case 'dtmf':
        return { kind: 'dtmf', digit: ev.digit };
      case 'mark':
        return { kind: 'played', name: ev.name };
      case 'session_end':
        return { kind: 'end', reason: ev.reason };
      case 'session_start':
        throw new BridgeError(
          'duplicate_session_start',
          'the session has already started; session_start is accepted once, as the first frame',
        );
    }
  }

  /**
   * The audio of a media event in the compact form providers write (compactMediaPayload), decoded
   * straight from the frame's bytes into a buffer of this wire's: no string of the whole frame, no JSON
   * parse, no buffer per chunk. Undefined for anything else, and for a payload that does not decode
   * whole or is half a sample: the full parse then reads the frame and reports what is wrong.
   */
  #compactAudio(data: Buffer): Uint8Array | undefined {
    const end = compactMediaPayload(data);
    if (end < 0) return undefined;
    const start = COMPACT_MEDIA_HEAD.length;
    const chars = end - start;
    const pad = chars === 0 ? 0 : data[end - 1] !== 0x3d ? 0 : data[end - 2] !== 0x3d ? 1 : 2;
    const bytes = (chars >> 2) * 3 - pad;
    if (this.#slin && (bytes & 1) !== 0) return undefined;
    if (this.#decoded.length < bytes) {
      this.#decoded = Buffer.alloc(Math.max(bytes, 2 * this.#decoded.length));
      this.#decodedView = new Uint8Array(0);
    }
    const written = this.#decoded.write(data.toString('latin1', start, end), 0, 'base64');
    if (written !== bytes) return undefined;
    if (this.#decodedView.length !== bytes) this.#decodedView = this.#decoded.subarray(0, bytes);
    return this.#decodedView;
  }

  get textAudio(): boolean {
    return this.#format?.encoding === 'base64';
  }

  audioText(chunk: Buffer): string {
    return `${MEDIA_AROUND.head}${chunk.toString('base64')}${MEDIA_AROUND.tail}`;
  }

  audioTextAround(): AudioTextAround {
    return MEDIA_AROUND;
  }

  markFrame(name: string): string {
    return JSON.stringify({ event: 'mark', name });
  }

  clearFrame(): string {
    return '{"event":"clear"}';
  }

  dtmfFrame(digit: string): string {
    return JSON.stringify({ event: 'dtmf', digit });
  }

  errorFrame(err: BridgeError): string {
    return errorFrame(err);
  }

  hangupFrame(reason: string): string {
    return JSON.stringify({ event: 'session_end', reason });
  }
}

export const defaultDialect: ProviderDialect = {
  name: 'default',
  async authenticate(req, url, _tenant, ctx) {
    if (ctx.config.mediaAuth === 'none') return { tenant: DEFAULT_TENANT, exp: undefined };
    const header = req.headers.authorization;
    const m = header === undefined ? null : /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
    const token = m?.[1] ?? url.searchParams.get('token') ?? undefined;
    const claims = await verifyMediaToken(token, (tenant) => ctx.tenants.getMediaSecret(tenant));
    return { tenant: claims.tenant, exp: claims.exp };
  },
  connect: () => new DefaultWire(),
};
