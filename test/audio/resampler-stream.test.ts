/**
 * Streaming behaviour: bit-identical output at any chunking, exact output counts (no drift) over hours,
 * reset, pass-through, and rate validation.
 */
import { describe, expect, it } from 'vitest';
import { designFilter } from '../../src/audio/filters.js';
import { RESAMPLER_RATES } from '../../src/audio/format.js';
import { createResampler, type Resampler, type ResamplerImpl } from '../../src/audio/resampler.js';
import { wasmAvailable } from '../../src/audio/resampler-wasm.js';
import { BridgeError } from '../../src/errors.js';

const IMPLS: ResamplerImpl[] = ['wasm', 'js'];

/** Deterministic pseudo-random generator (xorshift32) so failures replay. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** Noise plus a loud tone: exercises every tap and the PCM16 clamp. */
function testSignal(rate: number, samples: number, seed: number): Int16Array {
  const rand = rng(seed);
  const x = new Int16Array(samples);
  for (let n = 0; n < samples; n++) {
    const v = 30000 * Math.sin((2 * Math.PI * 997 * n) / rate) + 8000 * (rand() - 0.5);
    x[n] = Math.max(-32768, Math.min(32767, Math.round(v)));
  }
  return x;
}

/** Feeds `input` in chunks of the given sizes (cycled), checking the running count after each. */
function feed(r: Resampler, input: Int16Array, sizes: () => number): Int16Array {
  const { L, M } = designFilter(r.inRate, r.outRate);
  const out = new Int16Array(r.maxOutput(input.length) + 16);
  const scratch = new Int16Array(r.maxOutput(input.length));
  let read = 0;
  let written = 0;
  while (read < input.length) {
    const n = Math.min(sizes(), input.length - read);
    const chunk = input.subarray(read, read + n);
    expect(r.maxOutput(n)).toBeLessThanOrEqual(scratch.length);
    const k = r.process(chunk, scratch);
    expect(k).toBeLessThanOrEqual(r.maxOutput(n));
    out.set(scratch.subarray(0, k), written);
    read += n;
    written += k;
    // Output n exists once input floor(n*M/L) has arrived: exactly ceil(read*L/M) outputs so far.
    if (written !== Math.ceil((read * L) / M)) expect(written).toBe(Math.ceil((read * L) / M));
  }
  return out.subarray(0, written);
}

describe.each(IMPLS)('resampler streaming (%s)', (impl) => {
  it('gives bit-identical output for whole buffers, 20 ms chunks and random chunks on every pair', () => {
    for (const inRate of RESAMPLER_RATES) {
      for (const outRate of RESAMPLER_RATES) {
        if (inRate === outRate) continue;
        const x = testSignal(inRate, Math.round(inRate * 0.3), inRate + outRate);
        const r = createResampler(inRate, outRate, { impl });
        const whole = feed(r, x, () => x.length);
        r.reset();
        const twenty = feed(r, x, () => inRate / 50);
        r.reset();
        const rand = rng(outRate);
        const random = feed(r, x, () => Math.floor(rand() * rand() * 3000));
        const name = `${inRate}->${outRate}`;
        expect(whole.length, name).toBe(Math.ceil((x.length * outRate) / inRate));
        expect(
          Buffer.from(twenty.buffer, twenty.byteOffset, twenty.byteLength).equals(bytes(whole)),
          name,
        ).toBe(true);
        expect(bytes(random).equals(bytes(whole)), name).toBe(true);
        // A fresh instance agrees with a reset one.
        const fresh = feed(createResampler(inRate, outRate, { impl }), x, () => 441);
        expect(bytes(fresh).equals(bytes(whole)), name).toBe(true);
        r.free();
      }
    }
  });

  it('does not drift: output counts stay exact over an hour of 20 ms chunks', () => {
    // Silence keeps the arithmetic honest but cheap to check; the count is what drifts.
    const pairs =
      impl === 'wasm'
        ? ([
            [8000, 16000],
            [16000, 8000],
            [24000, 16000],
            [22050, 8000],
            [44100, 48000],
          ] as const)
        : ([[22050, 8000]] as const);
    const seconds = impl === 'wasm' ? 3600 : 600;
    for (const [inRate, outRate] of pairs) {
      const r = createResampler(inRate, outRate, { impl });
      const chunk = new Int16Array(inRate / 50);
      const out = new Int16Array(r.maxOutput(chunk.length));
      let total = 0;
      let read = 0;
      for (let i = 0; i < seconds * 50; i++) {
        total += r.process(chunk, out);
        read += chunk.length;
      }
      expect(total, `${inRate}->${outRate}`).toBe(Math.floor((read * outRate) / inRate));
      // An odd-sized tail: the count follows the phase, floor or floor + 1.
      total += r.process(chunk.subarray(0, 7), out);
      read += 7;
      const exact = (read * outRate) / inRate;
      expect(total - Math.floor(exact)).toBeGreaterThanOrEqual(0);
      expect(total - Math.floor(exact)).toBeLessThanOrEqual(1);
      r.free();
    }
  });

  it('gives the same bytes from processBytes as from process, at any byte offset and chunk length', () => {
    for (const [inRate, outRate] of [
      [8000, 16000],
      [16000, 8000],
      [24000, 16000],
      [22050, 8000],
    ] as const) {
      const x = testSignal(inRate, Math.round(inRate * 0.3), inRate);
      const want = bytes(feed(createResampler(inRate, outRate, { impl }), x, () => inRate / 50));
      const r = createResampler(inRate, outRate, { impl });
      // The input as a socket hands it over: a view at an odd byte offset of a larger read.
      const wire = Buffer.alloc(x.byteLength + 1);
      bytes(x).copy(wire, 1);
      const input = wire.subarray(1);
      const out = new Uint8Array(2 * r.maxOutput(x.length) + 3);
      const rand = rng(inRate + 1);
      let read = 0;
      let written = 3; // output at an odd place too
      while (read < input.length) {
        // Whole samples, from one to well past a kernel block (512).
        const n = 2 * Math.min(1 + Math.floor(rand() * 1400), (input.length - read) / 2);
        const view = r.processBytes(input.subarray(read, read + n));
        out.set(view, written);
        written += view.byteLength;
        read += n;
      }
      expect(Buffer.from(out.subarray(3, written)).equals(want), `${inRate}->${outRate}`).toBe(true);
      expect(() => r.processBytes(input.subarray(0, 3))).toThrow(/whole samples/);
      r.free();
    }
  });

  it.runIf(impl === 'wasm')("keeps processBytes' view intact while other instances run", () => {
    const a = createResampler(8000, 16000, { impl });
    const b = createResampler(8000, 16000, { impl });
    const c = createResampler(16000, 8000, { impl });
    const x = bytes(testSignal(8000, 160, 3));
    const view = a.processBytes(x);
    const copy = Buffer.from(view);
    expect(view.byteLength).toBe(640);
    b.processBytes(bytes(testSignal(8000, 160, 4)));
    c.processBytes(bytes(testSignal(16000, 320, 5)));
    expect(Buffer.from(view).equals(copy)).toBe(true);
    for (const r of [a, b, c]) r.free();
  });

  it('forgets its history on reset', () => {
    const r = createResampler(16000, 8000, { impl });
    const x = testSignal(16000, 3200, 7);
    const first = feed(r, x, () => 320);
    feed(r, testSignal(16000, 1234, 9), () => 100);
    r.reset();
    expect(bytes(feed(r, x, () => 320)).equals(bytes(first))).toBe(true);
  });
});

function bytes(a: Int16Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

describe('createResampler', () => {
  it('copies when the rates are equal', () => {
    const r = createResampler(16000, 16000);
    const x = testSignal(16000, 320, 1);
    const y = new Int16Array(r.maxOutput(320));
    expect(r.process(x, y)).toBe(320);
    expect(bytes(y).equals(bytes(x))).toBe(true);
    expect(r.latencyMs).toBe(0);
  });

  it('rejects a rate it does not know with invalid_field', () => {
    for (const [inRate, outRate, field, bad] of [
      [11025, 8000, 'inRate', 11025],
      [8000, 12345, 'outRate', 12345],
    ] as const) {
      let thrown: unknown;
      try {
        createResampler(inRate, outRate);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, `${inRate}->${outRate}`).toBeInstanceOf(BridgeError);
      expect(thrown).toMatchObject({ code: 'invalid_field', field });
      expect((thrown as BridgeError).message).toContain(String(bad));
    }
  });

  it('uses the WebAssembly kernel by default where it loads (the JS one only as a fallback)', () => {
    expect(wasmAvailable()).toBe(true);
    const x = testSignal(24000, 4800, 2);
    const byDefault = feed(createResampler(24000, 16000), x, () => 480);
    expect(
      bytes(byDefault).equals(bytes(feed(createResampler(24000, 16000, { impl: 'wasm' }), x, () => 480))),
    ).toBe(true);
  });

  it('designs each filter once and shares it', () => {
    expect(designFilter(24000, 16000)).toBe(designFilter(24000, 16000));
  });
});

describe('the two implementations', () => {
  it('agree to within one PCM16 step on every pair (float32 SIMD against float64 JS)', () => {
    for (const inRate of RESAMPLER_RATES) {
      for (const outRate of RESAMPLER_RATES) {
        if (inRate === outRate) continue;
        const x = testSignal(inRate, Math.round(inRate * 0.1), 3);
        const a = feed(createResampler(inRate, outRate, { impl: 'wasm' }), x, () => inRate / 50);
        const b = feed(createResampler(inRate, outRate, { impl: 'js' }), x, () => inRate / 50);
        expect(a.length).toBe(b.length);
        let worst = 0;
        for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
        expect(worst, `${inRate}->${outRate}`).toBeLessThanOrEqual(1);
      }
    }
  });
});

describe('the WebAssembly instances', () => {
  it('keep working while linear memory grows under them, and reuse freed state', () => {
    const x = testSignal(24000, 24000, 11);
    const whole = feed(createResampler(24000, 16000, { impl: 'wasm' }), x, () => x.length);
    const y = testSignal(22050, 4410, 6);
    const reference = feed(createResampler(22050, 8000, { impl: 'wasm' }), y, () => 441);
    const a = createResampler(24000, 16000, { impl: 'wasm' });
    const first = feed(a, x.subarray(0, 12000), () => 480);
    // Thousands of instances (about 5 KB each) force memory.grow, which detaches old views.
    const many = Array.from({ length: 3000 }, () => createResampler(22050, 8000, { impl: 'wasm' }));
    const used = many[1234]!;
    const out = new Int16Array(used.maxOutput(441));
    expect(used.process(testSignal(22050, 441, 5), out)).toBe(160);
    for (const r of many) if (r !== used) r.free();
    used.free();
    // The last block freed (with history in it) is handed out first, zeroed: it behaves as new.
    expect(
      bytes(feed(createResampler(22050, 8000, { impl: 'wasm' }), y, () => 441)).equals(bytes(reference)),
    ).toBe(true);
    const second = feed(a, x.subarray(12000), () => 480);
    const joined = new Int16Array(first.length + second.length);
    joined.set(first);
    joined.set(second, first.length);
    expect(bytes(joined).equals(bytes(whole))).toBe(true);
    expect(() => many[0]!.process(x, new Int16Array(x.length))).toThrow(/after free/);
  });
});
