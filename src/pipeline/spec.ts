/** Validation of a session's DSP spec, shared by the inline and worker pipelines. */
import { RESAMPLER_RATES } from '../audio/format.js';
import { invalidField } from '../errors.js';
import type { PipelineSessionSpec } from './types.js';

const CODECS = ['slin', 'pcmu', 'pcma'];
const RATES: readonly number[] = RESAMPLER_RATES;

/**
 * Throws `invalid_field` for a spec the DSP cannot run. Called by open() in both modes, so a bad spec
 * fails there, to the caller, and not later inside a worker where nobody would hear of it.
 */
export function checkSpec(spec: PipelineSessionSpec): void {
  const accepted = RATES.join(', ');
  if (!CODECS.includes(spec.callerIn.codec))
    throw invalidField('callerIn.codec', 'slin, pcmu or pcma', spec.callerIn.codec);
  if (!CODECS.includes(spec.callerOut.codec)) {
    throw invalidField('callerOut.codec', 'slin, pcmu or pcma', spec.callerOut.codec);
  }
  if (!RATES.includes(spec.callerIn.sampleRate)) {
    throw invalidField('callerIn.sampleRate', accepted, spec.callerIn.sampleRate);
  }
  if (!RATES.includes(spec.callerOut.sampleRate)) {
    throw invalidField('callerOut.sampleRate', accepted, spec.callerOut.sampleRate);
  }
  if (!RATES.includes(spec.botRate)) throw invalidField('botRate', accepted, spec.botRate);
}
