/**
 * The streaming resampler's interface, apart from the factory (resampler.ts) so that its two
 * implementations (resampler-js.ts, resampler-wasm.ts) need not import the module that imports them.
 */
export interface Resampler {
  readonly inRate: number;
  readonly outRate: number;
  /** Group delay plus samples held, in milliseconds. */
  readonly latencyMs: number;
  /** Most output samples `process` can write for `inputSamples` input samples. */
  maxOutput(inputSamples: number): number;
  /**
   * Resamples the first `inLength` samples of PCM16 `input` (all of it by default) into `output` from
   * index `outAt` (room for maxOutput(inLength) from there); returns samples written. Allocates nothing:
   * the length and offset let a caller pass long-lived buffers rather than a fresh view per chunk.
   */
  process(input: Int16Array, output: Int16Array, inLength?: number, outAt?: number): number;
  /**
   * `process` on bytes: the PCM16 little-endian samples of `input` (whole samples, at any byte offset)
   * resampled, as a view of PCM16 little-endian bytes that stays valid until this instance's next call
   * (the instance's own memory: other instances' calls do not touch it). A leg whose ends are both PCM16
   * hands its audio over this way, with no copy into or out of an Int16Array of its own.
   */
  processBytes(input: Uint8Array): Uint8Array;
  /** Forgets all history (as if new). */
  reset(): void;
  /** Releases the instance's state; the instance must not be used after. */
  free(): void;
}
