/** WebAssembly SIMD resampler (placeholder until the kernel lands: the JS implementation). */
import type { FilterDesign } from './filters.js';
import type { Resampler } from './resampler.js';
import { JsResampler } from './resampler-js.js';

export function wasmAvailable(): boolean {
  return false;
}

export function createWasmResampler(design: FilterDesign): Resampler {
  return new JsResampler(design);
}
