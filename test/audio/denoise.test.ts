/**
 * The noise suppressor step (src/audio/denoise.ts) on its own, chunk by chunk as a leg runs it: the
 * delay it adds, measured by correlation against the plain resampler's; speech kept and pink noise and
 * babble taken down on recorded speech (babble by RNNoise and the residual gate after it); chunks that
 * are not whole 10 ms frames; reset; and a throwing module. Through the bridge:
 * test/media/denoise-bridge.test.ts; the gate on its own: test/audio/denoise-gate.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { DenoiseStep, type RnnoiseModule } from '../../src/audio/denoise.js';
import { createResampler } from '../../src/audio/resampler.js';
import { loadSuppressor } from '../../src/pipeline/suppressor.js';
import { skipUnlessCI } from '../helpers/needs.js';
import {
  db,
  measureHeard,
  type NoisySpeech,
  noisySpeech,
  OTHER_SENTENCES,
  sentence,
  speechMissing,
  withNoise,
} from '../helpers/noisy-speech.js';

let module: RnnoiseModule;
beforeAll(async () => {
  const loaded = await loadSuppressor();
  if (loaded instanceof Error) throw loaded;
  module = loaded;
});

const missing = skipUnlessCI('test/audio/denoise.test.ts', speechMissing());

/** `input` through `process` in chunks of `chunkMs`, all the output joined. */
function chunked(
  input: Int16Array,
  rate: number,
  chunkMs: number,
  process: (chunk: Int16Array, out: Int16Array) => number,
  maxOut: (n: number) => number,
): Int16Array {
  const step = Math.round((rate * chunkMs) / 1000);
  const out = new Int16Array(maxOut(step) * Math.ceil(input.length / step) + 64);
  const scratch = new Int16Array(maxOut(step));
  let w = 0;
  for (let i = 0; i < input.length; i += step) {
    const n = process(input.subarray(i, Math.min(input.length, i + step)), scratch);
    out.set(scratch.subarray(0, n), w);
    w += n;
  }
  return out.subarray(0, w);
}

function denoised(clip: NoisySpeech, outRate: number, chunkMs = 20): Int16Array {
  const step = new DenoiseStep(module, clip.rate, outRate);
  try {
    return chunked(
      clip.noisy,
      clip.rate,
      chunkMs,
      (c, o) => step.process(c, c.length, o),
      (n) => step.maxOutput(n),
    );
  } finally {
    step.free();
  }
}

function plain(clip: NoisySpeech, outRate: number): Int16Array {
  const r = createResampler(clip.rate, outRate);
  try {
    return chunked(
      clip.noisy,
      clip.rate,
      20,
      (c, o) => r.process(c, o),
      (n) => r.maxOutput(n),
    );
  } finally {
    r.free();
  }
}

describe.skipIf(missing !== undefined)('the noise suppressor step', () => {
  for (const outRate of [8000, 16000]) {
    it(`adds at most 20 ms of delay, 8 kHz caller to ${outRate} Hz, measured by correlation`, () => {
      const clip = noisySpeech('pink', 20);
      const withIt = measureHeard(clip, denoised(clip, outRate), outRate);
      const without = measureHeard(clip, plain(clip, outRate), outRate);
      const added = withIt.delayMs - without.delayMs;
      const step = new DenoiseStep(module, 8000, outRate);
      const expected = step.latencyMs - createResampler(8000, outRate).latencyMs;
      step.free();
      console.log(
        `8 kHz -> ${outRate} Hz: delay ${withIt.delayMs.toFixed(2)} ms with the suppressor, ` +
          `${without.delayMs.toFixed(2)} ms without: ${added.toFixed(2)} ms added (its filters and frame say ${expected.toFixed(2)})`,
      );
      expect(added).toBeLessThanOrEqual(20);
      expect(Math.abs(added - expected)).toBeLessThan(1);
    });
  }

  for (const kind of ['pink', 'babble'] as const) {
    it(`takes ${kind} down by 15 dB or more at 5, 10 and 20 dB SNR and keeps the speech`, () => {
      for (const snr of [5, 10, 20]) {
        const clip = noisySpeech(kind, snr);
        const withIt = measureHeard(clip, denoised(clip, 8000), 8000);
        const without = measureHeard(clip, plain(clip, 8000), 8000);
        const reduction = db(without.noisePower / withIt.noisePower);
        console.log(
          `${kind} ${snr} dB SNR: noise-only ${reduction.toFixed(1)} dB quieter, envelope r ${withIt.envelopeR.toFixed(3)} ` +
            `(${without.envelopeR.toFixed(3)} without), speech level ${db(withIt.speechPower / without.speechPower).toFixed(1)} dB, VAD ${withIt.vadFrames}/${withIt.vadOf} frames (${without.vadFrames} without)`,
        );
        expect(reduction).toBeGreaterThanOrEqual(15);
        expect(withIt.envelopeR).toBeGreaterThanOrEqual(0.9);
        // Kept at its level too: a correlation does not see a gain that turns everything down.
        expect(Math.abs(db(withIt.speechPower / without.speechPower))).toBeLessThanOrEqual(3);
        expect(withIt.vadFrames).toBeLessThanOrEqual(without.vadFrames / 3);
      }
    });
  }

  it('takes babble down by 15 dB or more on other sentences and other crowds, and keeps the speech', () => {
    // The gate's margins were chosen on the clip above; here are callers and crowds it was not, three
    // sentences each behind its own babble at 5, 10 and 20 dB SNR.
    let seed = 101;
    for (const files of OTHER_SENTENCES) {
      for (const snr of [5, 10, 20]) {
        const clip = withNoise(sentence(files), 'babble', snr, seed++);
        const withIt = measureHeard(clip, denoised(clip, 8000), 8000);
        const without = measureHeard(clip, plain(clip, 8000), 8000);
        const reduction = db(without.noisePower / withIt.noisePower);
        console.log(
          `${files.join(' + ')}, babble ${snr} dB SNR: noise-only ${reduction.toFixed(1)} dB quieter, ` +
            `envelope r ${withIt.envelopeR.toFixed(3)} (${without.envelopeR.toFixed(3)} without), VAD ${withIt.vadFrames}/${withIt.vadOf} (${without.vadFrames} without)`,
        );
        expect(reduction, `${files.join(' + ')} at ${snr} dB`).toBeGreaterThanOrEqual(15);
        expect(withIt.envelopeR, `${files.join(' + ')} at ${snr} dB`).toBeGreaterThanOrEqual(0.9);
        expect(Math.abs(db(withIt.speechPower / without.speechPower))).toBeLessThanOrEqual(3);
      }
    }
  });

  it('gives the same audio for chunks that are not whole frames (15 ms), only later', () => {
    const clip = noisySpeech('pink', 10);
    const whole = denoised(clip, 8000, 20);
    const odd = denoised(clip, 8000, 15);
    // What has come out of both is the same audio: the chunking changes when it leaves, not what it is.
    const n = Math.min(whole.length, odd.length);
    expect(n).toBeGreaterThan(clip.noisy.length - 160);
    for (let i = 0; i < n; i++) if (whole[i] !== odd[i]) expect.fail(`sample ${i}: ${whole[i]} != ${odd[i]}`);
  });

  it('starts afresh after reset: the same input gives the same output as a new step', () => {
    const clip = noisySpeech('pink', 10);
    const step = new DenoiseStep(module, 8000, 8000);
    const out = new Int16Array(step.maxOutput(160));
    const first: number[] = [];
    const again: number[] = [];
    for (let i = 0; i + 160 <= 8000; i += 160) {
      const n = step.process(clip.noisy.subarray(i, i + 160), 160, out);
      first.push(...out.subarray(0, n));
    }
    step.reset();
    for (let i = 0; i + 160 <= 8000; i += 160) {
      const n = step.process(clip.noisy.subarray(i, i + 160), 160, out);
      again.push(...out.subarray(0, n));
    }
    step.free();
    expect(again).toEqual(first);
  });

  it('throws what a failing module throws, and frees its state after', () => {
    let destroyed = 0;
    const failing: RnnoiseModule = {
      get HEAPF32() {
        return module.HEAPF32;
      },
      _malloc: (b) => module._malloc(b),
      _free: (p) => module._free(p),
      _rnnoise_create: (m) => module._rnnoise_create(m),
      _rnnoise_init: (s, m) => module._rnnoise_init(s, m),
      _rnnoise_destroy: (s) => {
        destroyed++;
        module._rnnoise_destroy(s);
      },
      _rnnoise_process_frame: () => {
        throw new Error('RuntimeError: memory access out of bounds');
      },
    };
    const step = new DenoiseStep(failing, 8000, 16000);
    const out = new Int16Array(step.maxOutput(160));
    expect(() => {
      for (let i = 0; i < 10; i++) step.process(new Int16Array(160), 160, out);
    }).toThrow(/out of bounds/);
    step.free();
    expect(destroyed).toBe(1);
  });
});
