/**
 * Test-signal helpers: tone generation and tone SNR. Pure, synchronous, no I/O; used by the synthetic
 * caller, the load generator and the tests to check audio by measurement.
 */

/** A sine of `hz` at `rate`, `amplitude` a fraction of full scale, starting at `phase` radians. */
export function generateTone(
  hz: number,
  rate: number,
  samples: number,
  amplitude = 0.5,
  phase = 0,
): Int16Array {
  const out = new Int16Array(samples);
  const w = (2 * Math.PI * hz) / rate;
  const a = amplitude * 32767;
  for (let i = 0; i < samples; i++) out[i] = Math.round(a * Math.sin(w * i + phase));
  return out;
}

export interface ToneFit {
  /** Power of the fitted tone over power of what is left, in dB. */
  readonly snrDb: number;
  /** Amplitude of the fitted tone, a fraction of full scale. */
  readonly amplitude: number;
  readonly samples: number;
}

/**
 * Least-squares fit of `a·cos(wn) + b·sin(wn) + c` at the known frequency of PCM16 sample values: the
 * SNR is the fitted tone's power over the residual's (noise, distortion, aliasing, clicks at seams). A single fit over the whole signal also charges phase jumps (a lost or
 * repeated chunk) to the noise, which is what a listener would hear.
 */
export function fitTone(x: ArrayLike<number>, hz: number, rate: number): ToneFit {
  const n = x.length;
  if (n === 0) return { snrDb: Number.NEGATIVE_INFINITY, amplitude: 0, samples: 0 };
  const w = (2 * Math.PI * hz) / rate;
  // Normal equations of the 3-parameter fit, accumulated in doubles.
  let cc = 0;
  let ss = 0;
  let cs = 0;
  let c1 = 0;
  let s1 = 0;
  let xc = 0;
  let xs = 0;
  let x1 = 0;
  for (let i = 0; i < n; i++) {
    const c = Math.cos(w * i);
    const s = Math.sin(w * i);
    const v = x[i]!;
    cc += c * c;
    ss += s * s;
    cs += c * s;
    c1 += c;
    s1 += s;
    xc += v * c;
    xs += v * s;
    x1 += v;
  }
  const [a, b, d] = solve3(
    [
      [cc, cs, c1],
      [cs, ss, s1],
      [c1, s1, n],
    ],
    [xc, xs, x1],
  );
  let sig = 0;
  let res = 0;
  for (let i = 0; i < n; i++) {
    const t = a * Math.cos(w * i) + b * Math.sin(w * i);
    const r = x[i]! - t - d;
    sig += t * t;
    res += r * r;
  }
  const snrDb = res === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10(sig / res);
  return { snrDb, amplitude: Math.hypot(a, b) / 32767, samples: n };
}

/** Solves a 3x3 linear system by Gauss-Jordan elimination with partial pivoting (steadier than Cramer's
 * rule when the fit is nearly degenerate, a tone near 0 Hz or Nyquist); zeros when it is singular. */
function solve3(m: number[][], y: number[]): [number, number, number] {
  const a = m.map((row, i) => [...row, y[i]!]);
  const scale = Math.max(...m.flat().map(Math.abs));
  for (let col = 0; col < 3; col++) {
    let piv = col;
    for (let r = col + 1; r < 3; r++) if (Math.abs(a[r]![col]!) > Math.abs(a[piv]![col]!)) piv = r;
    if (!(Math.abs(a[piv]![col]!) > 1e-12 * scale)) return [0, 0, 0];
    [a[col], a[piv]] = [a[piv]!, a[col]!];
    for (let r = 0; r < 3; r++) {
      if (r === col) continue;
      const f = a[r]![col]! / a[col]![col]!;
      for (let c = col; c < 4; c++) a[r]![c]! -= f * a[col]![c]!;
    }
  }
  return [a[0]![3]! / a[0]![0]!, a[1]![3]! / a[1]![1]!, a[2]![3]! / a[2]![2]!];
}

/**
 * The span from the first to the last 10 ms block louder than `thresholdDbfs`: echoes start late and
 * end early, and leading or trailing silence is not part of the tone being measured.
 */
export function trimSilence(x: Int16Array, rate: number, thresholdDbfs = -40): Int16Array {
  const block = Math.max(1, Math.round(rate / 100));
  const limit = 32767 ** 2 * 10 ** (thresholdDbfs / 10);
  const loud = (start: number): boolean => {
    let e = 0;
    const end = Math.min(x.length, start + block);
    for (let i = start; i < end; i++) e += x[i]! * x[i]!;
    return e / Math.max(1, end - start) > limit;
  };
  let first = -1;
  for (let s = 0; s < x.length; s += block) {
    if (loud(s)) {
      first = s;
      break;
    }
  }
  if (first === -1) return x.subarray(0, 0);
  let last = first;
  for (let s = Math.floor((x.length - 1) / block) * block; s > first; s -= block) {
    if (loud(s)) {
      last = s;
      break;
    }
  }
  return x.subarray(first, Math.min(x.length, last + block));
}

/**
 * SNR of the steady part of a returned tone: silence trimmed, then `edgeMs` dropped at each end. A
 * resampler's start-up ramp (its group delay, a few ms) is not noise a listener hears, yet in a single
 * fit 50 missing samples of 24000 alone would cap the figure near 26 dB; gaps and phase jumps in the
 * middle still count in full.
 */
export function steadyToneSnrDb(x: Int16Array, hz: number, rate: number, edgeMs = 20): number | undefined {
  const t = trimSilence(x, rate);
  const edge = Math.round((rate * edgeMs) / 1000);
  if (t.length <= 4 * edge) return undefined;
  return fitTone(t.subarray(edge, t.length - edge), hz, rate).snrDb;
}
