/**
 * `builtin:wav:<path>`: plays a WAV file once, then silence. Any rate and any bit depth `wavefile`
 * reads; several channels are mixed down to mono (src/audio/wav.ts). Files are decoded once per path and
 * bot rate and kept (a handful of demo prompts, not a media library).
 */
import { readFile } from 'node:fs/promises';
import { decodeWav } from '../../audio/wav.js';
import type { PacingLoop } from '../pacing-loop.js';
import { GeneratorBot } from './builtin.js';
import type { CallerPort } from './types.js';

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

/** The file was read but is not a WAV file the bridge can play. Its message (the path and the decoder's
 * words) is for the server log; the provider is told only that it is not a WAV file. */
export class NotWavError extends Error {
  override readonly name = 'NotWavError';
}

async function decode(path: string, rate: number): Promise<Int16Array> {
  const bytes = await readFile(path);
  try {
    return decodeWav(bytes, rate);
  } catch (err) {
    throw new NotWavError(`${path} is not a WAV file the bridge can play: ${(err as Error).message}`);
  }
}

export class WavBot extends GeneratorBot {
  readonly #samples: Int16Array;

  constructor(port: CallerPort, loop: PacingLoop, rate: number, samples: Int16Array) {
    super(port, loop, rate);
    this.#samples = samples;
  }

  protected fill(out: Int16Array, offset: number): number {
    const n = Math.max(0, Math.min(out.length, this.#samples.length - offset));
    out.set(this.#samples.subarray(offset, offset + n));
    return n;
  }
}
