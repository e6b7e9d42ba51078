/**
 * Loads the noise suppressor (RNNoise built to WebAssembly, `@echogarden/rnnoise-wasm`: BSD-licensed like
 * RNNoise itself, its model compiled into the 126 KB module, no SIMD) for the thread that runs the DSP:
 * the main thread when it runs inline, each worker when there are workers. Loading is asynchronous (the
 * module compiles its WebAssembly) and happens once per thread at start-up, before any leg opens; the
 * DSP core (src/audio/denoise.ts) is then handed the loaded module and stays synchronous.
 *
 * A module that cannot be loaded is not fatal: the load resolves to the Error, legs that ask for the
 * suppressor run without it, and each says so once (src/pipeline/dsp.ts).
 */
import type { RnnoiseModule } from '../audio/denoise.js';

/** The package's entry; tests name another (a missing one) to see a load fail. */
export const SUPPRESSOR_MODULE = '@echogarden/rnnoise-wasm';

/** A loaded module, or why there is none. */
export type Suppressor = RnnoiseModule | Error;

const loads = new Map<string, Promise<Suppressor>>();

/** The module named (the package by default), loaded once per thread; never rejects. */
export function loadSuppressor(specifier: string = SUPPRESSOR_MODULE): Promise<Suppressor> {
  let load = loads.get(specifier);
  if (load === undefined) {
    load = importModule(specifier);
    loads.set(specifier, load);
  }
  return load;
}

async function importModule(specifier: string): Promise<Suppressor> {
  try {
    const factory = (await import(specifier)) as { default?: unknown };
    if (typeof factory.default !== 'function')
      return new Error(`${specifier} has no default export to make the module with`);
    const module = (await (factory.default as () => Promise<unknown>)()) as Partial<RnnoiseModule>;
    for (const fn of [
      '_malloc',
      '_free',
      '_rnnoise_create',
      '_rnnoise_init',
      '_rnnoise_process_frame',
    ] as const)
      if (typeof module[fn] !== 'function') return new Error(`${specifier} has no ${fn}`);
    return module as RnnoiseModule;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}
