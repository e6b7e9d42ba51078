/**
 * The session's audio formats as codec and rate, and base64 audio to PCM16 and back: `audio/pcm` is PCM16
 * LE at 24 kHz, `audio/pcmu` and `audio/pcma` are G.711 at 8 kHz.
 */
import { decodeInto, encodeInto, fromBase64, samplesIn, toBase64 } from '../../audio/codec.js';
import type { Codec } from '../../audio/format.js';
import { type AudioFormat, RealtimeRequestError } from './events.js';

export interface FormatInfo {
  readonly codec: Codec;
  readonly rate: 8000 | 24000;
  readonly name: 'audio/pcm' | 'audio/pcmu' | 'audio/pcma';
}

export function formatInfo(f: AudioFormat | undefined): FormatInfo {
  if (f?.type === 'audio/pcmu') return { codec: 'pcmu', rate: 8000, name: 'audio/pcmu' };
  if (f?.type === 'audio/pcma') return { codec: 'pcma', rate: 8000, name: 'audio/pcma' };
  return { codec: 'slin', rate: 24000, name: 'audio/pcm' };
}

/** An `input_audio_buffer.append`'s `audio` as PCM16 samples; throws `invalid_value` on `audio`. */
export function decodeAudio(audio: unknown, f: FormatInfo): Int16Array {
  if (typeof audio !== 'string') {
    throw new RealtimeRequestError('invalid_type', "Invalid type for 'audio': expected a string.", 'audio');
  }
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(audio);
  } catch {
    throw new RealtimeRequestError(
      'invalid_value',
      "Invalid 'audio'. Expected base64-encoded audio bytes.",
      'audio',
    );
  }
  if (f.codec === 'slin' && (bytes.byteLength & 1) !== 0) {
    throw new RealtimeRequestError(
      'invalid_value',
      `Invalid 'audio': ${f.name} audio must be whole 16-bit samples, got ${bytes.byteLength} bytes.`,
      'audio',
    );
  }
  const out = new Int16Array(samplesIn(f.codec, bytes.byteLength));
  decodeInto(f.codec, bytes, out);
  return out;
}

/** PCM16 samples as base64 in the output format. */
export function encodeAudio(pcm: Int16Array, f: FormatInfo): string {
  const out = new Uint8Array(f.codec === 'slin' ? pcm.length * 2 : pcm.length);
  encodeInto(f.codec, pcm, out);
  return toBase64(out);
}
