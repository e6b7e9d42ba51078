/**
 * Asterisk AudioSocket: a raw TCP stream Asterisk opens to the bridge's listener (the `AudioSocket`
 * dialplan application, `Dial(AudioSocket/...)`, or ARI externalMedia), not a WebSocket. Every message
 * is a type byte, a 16-bit big-endian payload length and the payload; the listener's transport
 * (src/media/audiosocket-listener.ts) splits the stream and hands each whole message here, header and all.
 *
 *   in:   0x01 the call's UUID (16 bytes), then slin (16-bit little-endian) at the rate its type names
 *         (0x10 8 kHz, 0x11 12k, 0x12 16k, 0x13 24k, 0x14 32k, 0x15 44.1k, 0x16 48k, 0x17 96k,
 *         0x18 192k), 0x03 a DTMF digit (one ASCII byte), 0x00 hang-up, 0xff an error (its code)
 *   out:  slin of the call's own type, 20 ms a message, paced at real time; 0x00 when the bot hangs up
 *
 * The call's rate is the type of its first audio message: the call starts on it (the UUID alone does not
 * say the rate), and that message is the call's first audio. Rates the resampler does not take (12, 32,
 * 96 and 192 kHz) are refused. There is no clear, no mark and no flow control: audio handed to Asterisk
 * cannot be taken back, so nothing is sent ahead of real time beyond the pacing lead, a barge-in drops
 * only what the bridge still holds, and a mark is reported played by the bridge's own reckoning of the
 * caller's playback (the mark rule of src/audio/playout.ts).
 *
 * Asterisk ends the call on any message from the bridge other than audio and hang-up, so a bad frame
 * from Asterisk is skipped and counted without a word back; only a refusal that ends the call anyway
 * sends 0xff (its payload the bridge's error code, ASCII) before the socket closes.
 *
 * Auth: AudioSocket carries no credentials. The listener takes connections only from the addresses in
 * AUDIOSOCKET_ALLOW, and its calls belong to AUDIOSOCKET_TENANT.
 */
import { RESAMPLER_RATES, type ResamplerRate } from '../../audio/format.js';
import { BridgeError } from '../../errors.js';
import type { SessionFormat } from '../format.js';
import type { CallFrame, CallStart, ProviderDialect, ProviderWire } from './types.js';

export const AUDIOSOCKET_KIND = {
  hangup: 0x00,
  uuid: 0x01,
  dtmf: 0x03,
  error: 0xff,
} as const;

/** The slin message types and the rate each names. */
export const AUDIOSOCKET_SLIN: Readonly<Record<number, number>> = {
  16: 8000,
  17: 12000,
  18: 16000,
  19: 24000,
  20: 32000,
  21: 44100,
  22: 48000,
  23: 96000,
  24: 192000,
};

/** Whether `type` is a message type of the protocol (else the stream is out of step). */
export function isAudioSocketType(type: number): boolean {
  return (
    type === AUDIOSOCKET_KIND.hangup ||
    type === AUDIOSOCKET_KIND.uuid ||
    type === AUDIOSOCKET_KIND.dtmf ||
    type === AUDIOSOCKET_KIND.error ||
    AUDIOSOCKET_SLIN[type] !== undefined
  );
}

const TAKEN = Object.entries(AUDIOSOCKET_SLIN)
  .filter(([, rate]) => (RESAMPLER_RATES as readonly number[]).includes(rate))
  .map(([type, rate]) => `0x${Number(type).toString(16)} (${rate} Hz)`)
  .join(', ');

/** One message: type, big-endian length, payload. */
export function audioSocketMessage(type: number, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const out = Buffer.allocUnsafe(3 + payload.byteLength);
  out[0] = type;
  out.writeUInt16BE(payload.byteLength, 1);
  out.set(payload, 3);
  return out;
}

const HANGUP = audioSocketMessage(AUDIOSOCKET_KIND.hangup);
const DIGIT = /^[0-9*#A-Da-d]$/;

function hex(type: number): string {
  return `0x${type.toString(16).padStart(2, '0')}`;
}

/** The 16 bytes of a UUID message in the lowercase 8-4-4-4-12 form. */
export function uuidString(bytes: Uint8Array): string {
  const h = Buffer.from(bytes).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export class AudioSocketWire implements ProviderWire {
  #uuid: string | undefined;
  /** The call's slin type and rate, from its first audio message. */
  #type = 0x10;
  #rate: ResamplerRate = 8000;
  readonly #audio: { kind: 'audio'; audio: Uint8Array } = { kind: 'audio', audio: new Uint8Array(0) };

  start(data: Buffer): CallStart | undefined {
    const type = data[0]!;
    const payload = data.subarray(3);
    if (this.#uuid === undefined) {
      if (type !== AUDIOSOCKET_KIND.uuid || payload.byteLength !== 16)
        throw new BridgeError(
          'bad_session_start',
          `an AudioSocket stream must begin with the UUID message (type 0x01, 16 bytes), got type ${hex(type)} of ${payload.byteLength} bytes`,
        );
      this.#uuid = uuidString(payload);
      return undefined;
    }
    const rate = AUDIOSOCKET_SLIN[type];
    if (rate === undefined) {
      // Digits or a repeated UUID before the first audio: the call (and its rate) is not known yet.
      if (type === AUDIOSOCKET_KIND.dtmf || type === AUDIOSOCKET_KIND.uuid) return undefined;
      throw new BridgeError(
        'bad_session_start',
        type === AUDIOSOCKET_KIND.hangup
          ? 'the AudioSocket call hung up before its first audio'
          : `after the UUID an AudioSocket stream must send slin audio (${TAKEN}), got type ${hex(type)}`,
      );
    }
    if (!(RESAMPLER_RATES as readonly number[]).includes(rate))
      throw new BridgeError(
        'bad_session_start',
        `AudioSocket audio of type ${hex(type)} (${rate} Hz) is not a rate the bridge takes: use ${TAKEN}`,
      );
    this.#type = type;
    this.#rate = rate as ResamplerRate;
    return {
      session_id: this.#uuid,
      customer_phone: undefined,
      direction: undefined,
      started_at: undefined,
      replay: true,
    };
  }

  /** slin at the call's rate both ways, 20 ms a message. */
  format(): SessionFormat {
    return {
      codec: 'slin',
      inputRate: this.#rate,
      outputRate: this.#rate,
      encoding: 'binary',
      chunkBytes: (this.#rate / 50) * 2,
      chunkMs: 20,
      silenceByte: 0,
    };
  }

  frame(data: Buffer): CallFrame {
    const type = data[0]!;
    const payload = data.subarray(3);
    if (type === this.#type) {
      if (payload.byteLength & 1)
        throw new BridgeError(
          'odd_length',
          `slin audio must be whole 16-bit samples (an even byte count), got ${payload.byteLength} bytes`,
        );
      if (payload.byteLength === 0) return { kind: 'none' };
      this.#audio.audio = payload;
      return this.#audio;
    }
    switch (type) {
      case AUDIOSOCKET_KIND.hangup:
        return { kind: 'end', reason: 'hangup' };
      case AUDIOSOCKET_KIND.dtmf: {
        const digit = payload.toString('latin1');
        if (!DIGIT.test(digit))
          throw new BridgeError(
            'invalid_field',
            `a DTMF message must carry one digit (0-9, *, #, A-D), got ${JSON.stringify(digit)}`,
            { field: 'dtmf' },
          );
        return { kind: 'dtmf', digit: digit.toUpperCase() };
      }
      case AUDIOSOCKET_KIND.error:
        // Asterisk's own codes: 0x01 the channel hung up; the others (frame forwarding, memory) leave it up.
        return payload[0] === 0x01 ? { kind: 'end', reason: 'hangup' } : { kind: 'none' };
      case AUDIOSOCKET_KIND.uuid:
        throw new BridgeError('invalid_field', 'a second UUID message in a live AudioSocket call', {
          field: 'type',
        });
      default:
        throw new BridgeError(
          'invalid_field',
          `audio of type ${hex(type)} in a call of type ${hex(this.#type)} (${this.#rate} Hz): a call keeps the rate of its first audio`,
          { field: 'type' },
        );
    }
  }

  /**
   * Asterisk plays each message as it comes, with no buffer to absorb a catch-up burst: audio that fell
   * behind (a stall, a late bot) starts a new run at the current time instead.
   */
  readonly catchUpMs = 20;

  readonly textAudio = false;

  /** Never called: AudioSocket's audio is binary. */
  audioText(): string {
    throw new Error('AudioSocket audio goes as binary messages');
  }

  /** A chunk of slin as one message of the call's type (a new buffer: the socket may keep it). */
  audioFrame(chunk: Buffer): Buffer {
    return audioSocketMessage(this.#type, chunk);
  }

  /** No marks in AudioSocket: a mark is only ever reckoned (see ProviderWire.markFrame). */
  markFrame(): undefined {
    return undefined;
  }

  /** Nothing to clear: Asterisk holds none of the audio sent (it plays each message as it comes). */
  clearFrame(): undefined {
    return undefined;
  }

  /** Asterisk takes only audio and hang-up from the bridge. */
  dtmfFrame(): undefined {
    return undefined;
  }

  /** 0xff only when the call ends anyway (Asterisk hangs up on it); a skipped frame goes unanswered. */
  errorFrame(err: BridgeError): Buffer | undefined {
    if (err.close === undefined) return undefined;
    return audioSocketMessage(AUDIOSOCKET_KIND.error, Buffer.from(err.code, 'ascii'));
  }

  hangupFrame(): Buffer {
    return HANGUP;
  }
}

export const audioSocketDialect: ProviderDialect = {
  name: 'audiosocket',
  /** Never reached: AudioSocket is not on a WebSocket path; its listener checks the peer's address. */
  async authenticate() {
    throw new BridgeError(
      'not_found',
      'AudioSocket calls come over TCP to AUDIOSOCKET_PORT, not by a WebSocket upgrade',
    );
  },
  connect: () => new AudioSocketWire(),
};
