/**
 * A session's audio format: the `session_start` `media` object, else the tenant's stored config, else
 * the defaults (slin, 8000 Hz, binary, 20 ms chunks), field by field.
 */
import { ALAW_ENCODE, MULAW_ENCODE } from '../audio/codec.js';
import {
  bytesForMs,
  bytesPerSample,
  type Codec,
  type Encoding,
  type ResamplerRate,
  type TelephonyRate,
} from '../audio/format.js';
import type { MediaStreamConfig } from '../state/types.js';
import type { MediaOverrides } from './protocol.js';

export interface SessionFormat {
  readonly codec: Codec;
  /** The caller's audio as the provider sends it. */
  readonly inputRate: ResamplerRate;
  /** The bot's audio as the bridge sends it to the provider. */
  readonly outputRate: ResamplerRate;
  readonly encoding: Encoding;
  /** Size of every outbound chunk. */
  readonly chunkBytes: number;
  /** Duration of one outbound chunk (may be fractional for odd sizes). */
  readonly chunkMs: number;
  /** The codec's encoding of silence, to pad a partial chunk. */
  readonly silenceByte: number;
}

/** A format at the provider API's own rates (AudioSocket's calls may also run at 24 or 48 kHz). */
export type TelephonyFormat = SessionFormat & {
  readonly inputRate: TelephonyRate;
  readonly outputRate: TelephonyRate;
};

export const DEFAULT_CHUNK_MS = 20;

export function silenceByte(codec: Codec): number {
  if (codec === 'pcmu') return MULAW_ENCODE[0]!;
  if (codec === 'pcma') return ALAW_ENCODE[0]!;
  return 0;
}

export function resolveFormat(
  media: MediaOverrides | undefined,
  stored: MediaStreamConfig | undefined,
): TelephonyFormat {
  const codec = media?.codec ?? stored?.codec ?? 'slin';
  const inputRate = media?.sample_rate ?? stored?.input_sample_rate ?? 8000;
  // output_sample_rate defaults to sample_rate when the media object sets one.
  const outputRate =
    media?.output_sample_rate ??
    media?.sample_rate ??
    stored?.output_sample_rate ??
    stored?.input_sample_rate ??
    inputRate;
  const encoding = media?.encoding ?? stored?.encoding ?? 'binary';
  let chunkBytes =
    media?.chunk_bytes ?? stored?.chunk_bytes ?? bytesForMs(codec, outputRate, DEFAULT_CHUNK_MS);
  const bps = bytesPerSample(codec);
  // A chunk is a whole number of samples (parseChunkBytes admits only even sizes, so this is a no-op today).
  chunkBytes -= chunkBytes % bps;
  return {
    codec,
    inputRate,
    outputRate,
    encoding,
    chunkBytes,
    chunkMs: (chunkBytes / bps / outputRate) * 1000,
    silenceByte: silenceByte(codec),
  };
}
