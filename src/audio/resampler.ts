/**
 * The streaming resampler's public API. One stateful instance per direction per session; the filters
 * behind it are designed once per rate pair and shared (src/audio/filters.ts). Two implementations with
 * the same behaviour: a WebAssembly SIMD kernel (the default) and a pure-JS fallback.
 */
import { invalidField } from '../errors.js';
import { designFilter } from './filters.js';
import { RESAMPLER_RATES } from './format.js';
import { JsResampler } from './resampler-js.js';
import type { Resampler } from './resampler-types.js';
import { createWasmResampler, wasmAvailable } from './resampler-wasm.js';

export type { Resampler } from './resampler-types.js';

export type ResamplerImpl = 'wasm' | 'js';

const RATES_ACCEPTED = RESAMPLER_RATES.join(', ');

function checkRate(value: number, field: string): void {
  if (!(RESAMPLER_RATES as readonly number[]).includes(value))
    throw invalidField(field, RATES_ACCEPTED, value);
}

/** Same rate in and out: a copy, no delay. */
class PassThrough implements Resampler {
  readonly latencyMs = 0;
  constructor(
    readonly inRate: number,
    readonly outRate: number,
  ) {}
  maxOutput(inputSamples: number): number {
    return inputSamples;
  }
  process(input: Int16Array, output: Int16Array, inLength = input.length, outAt = 0): number {
    if (inLength === input.length) output.set(input, outAt);
    else for (let i = 0; i < inLength; i++) output[outAt + i] = input[i]!;
    return inLength;
  }
  processBytes(input: Uint8Array): Uint8Array {
    return input;
  }
  reset(): void {}
  free(): void {}
}

/**
 * A resampler from `inRate` to `outRate` (each one of 8000, 16000, 22050, 24000, 44100, 48000).
 * `impl` forces an implementation; by default WebAssembly SIMD where the runtime has it, else JS.
 */
export function createResampler(
  inRate: number,
  outRate: number,
  options?: { impl?: ResamplerImpl },
): Resampler {
  checkRate(inRate, 'inRate');
  checkRate(outRate, 'outRate');
  if (inRate === outRate) return new PassThrough(inRate, outRate);
  const design = designFilter(inRate, outRate);
  const impl = options?.impl ?? (wasmAvailable() ? 'wasm' : 'js');
  return impl === 'wasm' ? createWasmResampler(design) : new JsResampler(design);
}
