/**
 * ElevenLabs Agents audio formats (`pcm_16000`, `ulaw_8000`, ...) as codec and rate, and the base64 audio
 * of `user_audio_chunk` and `audio_event.audio_base_64` to PCM16 and back. `pcm_<rate>` is PCM16 LE mono.
 */
import type { ConversationInitiationMetadataEventAgentOutputAudioFormat as FormatName } from '@elevenlabs/types';
import { decodeInto, encodeInto, fromBase64, samplesIn, toBase64 } from '../../audio/codec.js';
import type { Codec } from '../../audio/format.js';

export type { FormatName };

export const FORMAT_NAMES: readonly FormatName[] = [
  'pcm_8000',
  'pcm_16000',
  'pcm_22050',
  'pcm_24000',
  'pcm_44100',
  'pcm_48000',
  'ulaw_8000',
];

export interface AudioFormat {
  readonly name: FormatName;
  readonly codec: Codec;
  readonly rate: number;
}

export function isFormatName(v: unknown): v is FormatName {
  return (FORMAT_NAMES as readonly unknown[]).includes(v);
}

export function audioFormat(name: FormatName): AudioFormat {
  if (name === 'ulaw_8000') return { name, codec: 'pcmu', rate: 8000 };
  return { name, codec: 'slin', rate: Number(name.slice('pcm_'.length)) };
}

/** Base64 audio to PCM16; a string saying what is wrong with it instead where it cannot be decoded. */
export function decodeChunk(b64: unknown, f: AudioFormat): Int16Array | string {
  if (typeof b64 !== 'string') return `user_audio_chunk must be a base64 string, got ${typeof b64}`;
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(b64);
  } catch {
    return 'user_audio_chunk is not valid base64';
  }
  if (f.codec === 'slin' && (bytes.length & 1) !== 0)
    return `user_audio_chunk in ${f.name} must be whole 16-bit samples, got ${bytes.length} bytes`;
  const out = new Int16Array(samplesIn(f.codec, bytes.length));
  decodeInto(f.codec, bytes, out);
  return out;
}

export function encodeChunk(pcm: Int16Array, f: AudioFormat): string {
  const out = new Uint8Array(f.codec === 'slin' ? pcm.length * 2 : pcm.length);
  encodeInto(f.codec, pcm, out);
  return toBase64(out);
}
