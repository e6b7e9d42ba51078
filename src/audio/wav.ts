/**
 * WAV bytes to PCM16 mono at a given rate: any bit depth `wavefile` reads, any number of channels (mixed
 * down to mono), any sample rate. Pure and synchronous; callers read the file and map errors to theirs.
 */
import wavefile from 'wavefile';
import { RESAMPLER_RATES } from './format.js';
import { createResampler } from './resampler.js';

/** Throws an Error whose message says why the bytes are not a usable WAV file. */
export function decodeWav(bytes: Uint8Array, rate: number): Int16Array {
  const wav = new wavefile.WaveFile();
  let fileRate: number;
  wav.fromBuffer(bytes);
  wav.toBitDepth('16');
  fileRate = (wav.fmt as { sampleRate: number }).sampleRate;
  // A rate the bridge's resampler does not take goes through wavefile's (tone SNR measured ~27 dB on
  // 16 kHz -> 8 kHz, 21 dB on 11025 -> 16000 Hz, 30 dB on 32000 -> 16000 Hz, where ours gives far more):
  // good enough for an odd-rate demo file.
  if (fileRate !== rate && !isResamplerRate(fileRate)) {
    wav.toSampleRate(rate, { method: 'sinc', LPF: true });
    fileRate = rate;
  }
  const raw = wav.getSamples(false, Int16Array) as unknown as Int16Array | Int16Array[];
  const mono = mixDown(Array.isArray(raw) ? raw : [raw]);
  return fileRate === rate ? mono : resampleOnce(mono, fileRate, rate);
}

function mixDown(channels: readonly Int16Array[]): Int16Array {
  if (channels.length <= 1) return channels[0] ?? new Int16Array(0);
  const n = channels[0]!.length;
  const mono = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    let sum = 0;
    for (const ch of channels) sum += ch[i]!;
    mono[i] = Math.round(sum / channels.length);
  }
  return mono;
}

const isResamplerRate = (r: number): boolean => (RESAMPLER_RATES as readonly number[]).includes(r);

/** A whole buffer through the streaming resampler, its delay removed (zeros pushed through the tail). */
function resampleOnce(pcm: Int16Array, inRate: number, outRate: number): Int16Array {
  const r = createResampler(inRate, outRate);
  try {
    const delayOut = Math.round((r.latencyMs * outRate) / 1000);
    const input = new Int16Array(pcm.length + Math.ceil((r.latencyMs * inRate) / 1000) + 64);
    input.set(pcm);
    const out = new Int16Array(r.maxOutput(input.length));
    const n = r.process(input, out);
    const want = Math.round((pcm.length * outRate) / inRate);
    return out.slice(Math.min(delayOut, n), Math.min(n, delayOut + want));
  } finally {
    r.free();
  }
}
