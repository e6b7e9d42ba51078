/**
 * What a synthetic call says: `tone:<hz>`, `turns:<hz>[/<on ms>/<off ms>]` (a caller who speaks in
 * turns: the tone for `on`, quiet for `off`, again and again; 1000/3000 by default, so a bot's voice
 * detection sees each turn end), `wav:<path>`, `speech:<text>` (espeak-ng, where installed) or `silence`,
 * rendered once up front as PCM16 mono at the call's input rate (no work while pacing).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { generateTone } from '../audio/tone.js';
import { decodeWav } from '../audio/wav.js';
import { BridgeError } from '../errors.js';

export type AudioSpec =
  | { readonly kind: 'tone'; readonly hz: number }
  | { readonly kind: 'turns'; readonly hz: number; readonly onMs: number; readonly offMs: number }
  | { readonly kind: 'wav'; readonly path: string }
  | { readonly kind: 'speech'; readonly text: string }
  | { readonly kind: 'silence' };

export const AUDIO_SPEC_ACCEPTS =
  '"tone:<hz>", "turns:<hz>[/<on ms>/<off ms>]", "wav:<path>", "speech:<text>" or "silence"';

/** Bound on espeak-ng: a sentence renders in well under a second. */
const ESPEAK_TIMEOUT_MS = 15_000;

export function parseAudioSpec(spec: unknown, field = 'audio'): AudioSpec {
  const bad = () =>
    new BridgeError('invalid_field', `${field} must be ${AUDIO_SPEC_ACCEPTS}, got ${JSON.stringify(spec)}`, {
      field,
    });
  if (typeof spec !== 'string') throw bad();
  if (spec === 'silence') return { kind: 'silence' };
  const colon = spec.indexOf(':');
  const kind = spec.slice(0, colon);
  const arg = spec.slice(colon + 1);
  if (colon === -1 || arg === '') throw bad();
  if (kind === 'tone') {
    const hz = Number(arg);
    if (!Number.isFinite(hz) || hz <= 0 || hz >= 4000) {
      throw new BridgeError(
        'invalid_field',
        `${field} tone must be above 0 and below 4000 Hz, got ${JSON.stringify(arg)}`,
        {
          field,
        },
      );
    }
    return { kind: 'tone', hz };
  }
  if (kind === 'turns') {
    const m = /^(\d+(?:\.\d+)?)(?:\/(\d{2,6})\/(\d{2,6}))?$/.exec(arg);
    const hz = Number(m?.[1]);
    if (m === null || !(hz > 0 && hz < 4000)) throw bad();
    return { kind: 'turns', hz, onMs: Number(m[2] ?? 1000), offMs: Number(m[3] ?? 3000) };
  }
  if (kind === 'wav') return { kind: 'wav', path: arg };
  if (kind === 'speech') return { kind: 'speech', text: arg };
  throw bad();
}

/** PCM16 mono at `rate`, `seconds` long (a WAV or speech is cut or padded with silence to fit). */
export async function renderAudio(spec: AudioSpec, rate: number, seconds: number): Promise<Int16Array> {
  const samples = Math.round(rate * seconds);
  switch (spec.kind) {
    case 'silence':
      return new Int16Array(samples);
    case 'tone':
      return generateTone(spec.hz, rate, samples, 0.5);
    case 'turns': {
      const out = generateTone(spec.hz, rate, samples, 0.5);
      const period = ((spec.onMs + spec.offMs) * rate) / 1000;
      const on = (spec.onMs * rate) / 1000;
      for (let i = 0; i < out.length; i++) if (i % period >= on) out[i] = 0;
      return out;
    }
    case 'wav': {
      let bytes: Buffer;
      try {
        bytes = await readFile(spec.path);
      } catch (err) {
        throw new BridgeError('invalid_field', `audio wav file cannot be read: ${(err as Error).message}`, {
          field: 'audio',
        });
      }
      return fitLength(wavToPcm(bytes, rate, spec.path), samples);
    }
    case 'speech':
      return fitLength(wavToPcm(await espeak(spec.text), rate, 'espeak-ng output'), samples);
  }
}

function fitLength(pcm: Int16Array, samples: number): Int16Array {
  if (pcm.length === samples) return pcm;
  const out = new Int16Array(samples);
  out.set(pcm.subarray(0, samples));
  return out;
}

/** Any WAV (rate, depth, channels) to PCM16 mono at `rate`. */
export function wavToPcm(bytes: Uint8Array, rate: number, what: string): Int16Array {
  try {
    return decodeWav(bytes, rate);
  } catch (err) {
    throw new BridgeError(
      'invalid_field',
      `audio ${what} is not a usable WAV file: ${(err as Error).message}`,
      {
        field: 'audio',
      },
    );
  }
}

function espeak(text: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(
      'espeak-ng',
      ['--stdout', '--', text],
      { encoding: 'buffer', timeout: ESPEAK_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout) => {
        if ((err as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
          reject(
            new BridgeError(
              'invalid_field',
              'audio "speech:<text>" needs espeak-ng, which is not installed here (apt-get install espeak-ng); use "tone:<hz>" or "wav:<path>"',
              { field: 'audio' },
            ),
          );
        } else if (err !== null) {
          reject(new BridgeError('internal', `espeak-ng failed: ${err.message}`));
        } else resolve(stdout);
      },
    );
  });
}
