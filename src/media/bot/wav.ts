/**
 * `builtin:wav:<path>`: plays a WAV file once, then silence. Any rate the resampler takes and any bit
 * depth `wavefile` reads; several channels are mixed down to mono. Files are decoded once per path and
 * bot rate and kept (a handful of demo prompts, not a media library).
 */
import { readFile } from 'node:fs/promises';
import wavefile from 'wavefile';
import { createResampler } from '../../audio/resampler.js';
import { BridgeError, isBridgeError } from '../../errors.js';
import type { PacingLoop } from '../pacing-loop.js';
import { GeneratorBot } from './builtin.js';
import type { BotHandler } from './types.js';

const CACHE_MAX = 16;
const cache = new Map<string, Promise<Int16Array>>();

/** The file's audio as mono PCM16 at `rate`. */
export function loadWav(path: string, rate: number): Promise<Int16Array> {
  const key = `${rate}\u0000${path}`;
  let p = cache.get(key);
  if (p === undefined) {
    p = decode(path, rate);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(key, p);
    // A failed load is not cached: the file may appear later.
    p.catch(() => cache.delete(key));
  }
  return p;
}

async function decode(path: string, rate: number): Promise<Int16Array> {
  const bytes = await readFile(path);
  let wav: InstanceType<typeof wavefile.WaveFile>;
  try {
    wav = new wavefile.WaveFile(bytes);
    wav.toBitDepth('16');
  } catch (err) {
    throw new BridgeError(
      'bot_unavailable',
      `${path} is not a WAV file wavefile can read: ${(err as Error).message}`,
    );
  }
  const fmt = wav.fmt as { sampleRate: number; numChannels: number };
  const raw = wav.getSamples(false, Int16Array) as unknown as Int16Array | Int16Array[];
  const channels = Array.isArray(raw) ? raw : [raw];
  const n = channels[0]?.length ?? 0;
  let mono: Int16Array;
  if (channels.length === 1) mono = channels[0]!;
  else {
    mono = new Int16Array(n);
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (const ch of channels) sum += ch[i]!;
      mono[i] = Math.round(sum / channels.length);
    }
  }
  if (fmt.sampleRate === rate) return mono;
  let resampler: ReturnType<typeof createResampler>;
  try {
    resampler = createResampler(fmt.sampleRate, rate);
  } catch (err) {
    const why = isBridgeError(err) ? err.message : String(err);
    throw new BridgeError('bot_unavailable', `${path} has a sample rate the bridge cannot resample: ${why}`);
  }
  try {
    const out = new Int16Array(resampler.maxOutput(mono.length));
    const written = resampler.process(mono, out);
    return out.subarray(0, written);
  } finally {
    resampler.free();
  }
}

export class WavBot extends GeneratorBot {
  readonly #samples: Int16Array;

  constructor(handler: BotHandler, loop: PacingLoop, rate: number, samples: Int16Array) {
    super(handler, loop, rate);
    this.#samples = samples;
  }

  protected fill(out: Int16Array, offset: number): number {
    const n = Math.max(0, Math.min(out.length, this.#samples.length - offset));
    out.set(this.#samples.subarray(offset, offset + n));
    return n;
  }
}
