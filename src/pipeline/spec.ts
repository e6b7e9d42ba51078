/** Validation of a leg's spec, shared by the inline and worker pipelines. */
import { RESAMPLER_RATES } from '../audio/format.js';
import { invalidField } from '../errors.js';
import type { LegSpec } from './types.js';

const CODECS = ['slin', 'pcmu', 'pcma'];
const RATES: readonly number[] = RESAMPLER_RATES;
const STEPS: readonly string[] = ['denoise'];

/**
 * Throws `invalid_field` for a spec the DSP cannot run. Called by open() in both modes, so a bad spec
 * fails there, to the caller, and not later inside a worker where nobody would hear of it.
 */
export function checkSpec(spec: LegSpec): void {
  const accepted = RATES.join(', ');
  for (const end of ['from', 'to'] as const) {
    const f = spec[end];
    if (!CODECS.includes(f.codec)) throw invalidField(`${end}.codec`, 'slin, pcmu or pcma', f.codec);
    if (!RATES.includes(f.rate)) throw invalidField(`${end}.rate`, accepted, f.rate);
  }
  for (const step of spec.steps ?? [])
    if (!STEPS.includes(step)) throw invalidField('steps', `a list of ${STEPS.join(', ')}`, step);
}
