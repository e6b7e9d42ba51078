/**
 * Audio formats the bridge speaks, and their validation. Pure: no I/O.
 */
import { invalidField } from '../errors.js';

export type Codec = 'slin' | 'pcmu' | 'pcma';
export type Encoding = 'binary' | 'base64';

/** Rates the provider may use on the telephony side. */
export const TELEPHONY_RATES = [8000, 16000] as const;
export type TelephonyRate = (typeof TELEPHONY_RATES)[number];

/** Rates the resampler converts among (bots and TTS engines use the higher ones). */
export const RESAMPLER_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
export type ResamplerRate = (typeof RESAMPLER_RATES)[number];

const CODEC_ALIASES: Readonly<Record<string, Codec>> = {
  slin: 'slin',
  slin16: 'slin',
  pcm16: 'slin',
  l16: 'slin',
  linear16: 'slin',
  pcmu: 'pcmu',
  ulaw: 'pcmu',
  mulaw: 'pcmu',
  g711u: 'pcmu',
  pcma: 'pcma',
  alaw: 'pcma',
  g711a: 'pcma',
};

export const CODEC_NAMES_ACCEPTED = 'slin (or PCM16, L16, LINEAR16, slin16), pcmu or pcma';

/** Canonical codec for a name, case-insensitive; throws an `invalid_field` error naming `field`. */
export function parseCodec(value: unknown, field = 'codec'): Codec {
  const codec = typeof value === 'string' ? CODEC_ALIASES[value.toLowerCase()] : undefined;
  if (codec === undefined) throw invalidField(field, CODEC_NAMES_ACCEPTED, value);
  return codec;
}

export function parseTelephonyRate(value: unknown, field: string): TelephonyRate {
  if (value !== 8000 && value !== 16000) throw invalidField(field, '8000 or 16000', value);
  return value;
}

export function parseEncoding(value: unknown, field = 'encoding'): Encoding {
  if (value !== 'binary' && value !== 'base64') throw invalidField(field, '"binary" or "base64"', value);
  return value;
}

/** Bytes per sample of a codec on the wire. */
export function bytesPerSample(codec: Codec): 1 | 2 {
  return codec === 'slin' ? 2 : 1;
}

/** Bytes of `ms` milliseconds of audio. */
export function bytesForMs(codec: Codec, sampleRate: number, ms: number): number {
  return Math.round((sampleRate * ms) / 1000) * bytesPerSample(codec);
}

/** chunk_bytes bounds: 10 ms at 8 kHz µ-law up to 200 ms of PCM16 at 16 kHz. */
export const CHUNK_BYTES_MIN = 80;
export const CHUNK_BYTES_MAX = 6400;

export function parseChunkBytes(value: unknown, field = 'chunk_bytes'): number {
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value % 2 !== 0 ||
    value < CHUNK_BYTES_MIN ||
    value > CHUNK_BYTES_MAX
  ) {
    throw invalidField(field, `an even integer from ${CHUNK_BYTES_MIN} to ${CHUNK_BYTES_MAX}`, value);
  }
  return value;
}

/** The format of one direction of a call's audio. */
export interface StreamFormat {
  readonly codec: Codec;
  readonly sampleRate: number;
}
