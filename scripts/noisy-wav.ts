/**
 * `npm run noisy-wav -- --out noisy.wav [--noise pink|babble] [--snr 10] [--speech speech.wav]`
 * Writes speech in noise as an 8 kHz mono WAV, to hear the noise suppressor with
 * `npm run call -- --audio wav:noisy.wav --record heard.wav` against a bridge with DENOISE=true
 * (docs/denoise.md). The speech is the recorded prompts the tests use (Debian's
 * asterisk-core-sounds-en-wav) unless `--speech` names a WAV of your own; the noise is the tests' own,
 * from a seed: pink noise, or babble (which needs the prompts). 1.5 s of noise alone comes first, 1.2 s after.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import wavefile from 'wavefile';
import { decodeWav } from '../src/audio/wav.js';
import {
  type NoiseKind,
  SPEECH_RATE,
  speech,
  speechMissing,
  withNoise,
} from '../test/helpers/noisy-speech.js';

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    noise: { type: 'string', default: 'pink' },
    snr: { type: 'string', default: '10' },
    speech: { type: 'string' },
  },
});
const fail = (message: string): never => {
  process.stderr.write(`noisy-wav: ${message}\n`);
  process.exit(2);
};
if (values.out === undefined) fail('--out takes the WAV file to write');
if (values.noise !== 'pink' && values.noise !== 'babble')
  fail(`--noise takes pink or babble, got ${JSON.stringify(values.noise)}`);
const snr = Number(values.snr);
if (!Number.isFinite(snr) || snr < -10 || snr > 60) fail(`--snr takes dB from -10 to 60, got ${values.snr}`);
const missing = speechMissing();
if (missing !== undefined && (values.speech === undefined || values.noise === 'babble')) fail(missing);
const clean = values.speech === undefined ? speech() : decodeWav(readFileSync(values.speech), SPEECH_RATE);
const clip = withNoise(clean, values.noise as NoiseKind, snr);
const wav = new wavefile.WaveFile();
wav.fromScratch(1, SPEECH_RATE, '16', clip.noisy);
writeFileSync(values.out!, wav.toBuffer());
process.stdout.write(
  `${values.out}: ${(clip.noisy.length / SPEECH_RATE).toFixed(1)} s of speech in ${values.noise} noise at ${snr} dB SNR, 8 kHz\n`,
);
