/**
 * Audio measurements for tests: tones in, sine fits and SNR out.
 */

/** A sine as PCM16 LE bytes. */
export function tonePcm16(hz: number, rate: number, samples: number, amplitude = 10_000, phase0 = 0): Buffer {
  const out = Buffer.alloc(samples * 2);
  const w = (2 * Math.PI * hz) / rate;
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(amplitude * Math.sin(phase0 + w * i)), i * 2);
  return out;
}

/** PCM16 LE bytes (any alignment) as numbers. */
export function pcm16Samples(bytes: Uint8Array): Float64Array {
  const n = bytes.byteLength >> 1;
  const out = new Float64Array(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

export interface SineFit {
  readonly amplitude: number;
  /** Signal power over residual power, dB. */
  readonly snrDb: number;
}

/**
 * Least-squares fit of `a cos(wn) + b sin(wn) + c` at the known frequency; everything the fit does not
 * explain (noise, distortion, aliasing, clicks at seams, lost or repeated samples) counts as error.
 */
export function fitSine(x: Float64Array, hz: number, rate: number): SineFit {
  const w = (2 * Math.PI * hz) / rate;
  // Normal equations of the 3-parameter fit.
  let scc = 0;
  let sss = 0;
  let scs = 0;
  let sc = 0;
  let ss = 0;
  let xc = 0;
  let xs = 0;
  let x1 = 0;
  const n = x.length;
  for (let i = 0; i < n; i++) {
    const c = Math.cos(w * i);
    const s = Math.sin(w * i);
    const v = x[i]!;
    scc += c * c;
    sss += s * s;
    scs += c * s;
    sc += c;
    ss += s;
    xc += v * c;
    xs += v * s;
    x1 += v;
  }
  const [a, b, k] = solve3(
    [
      [scc, scs, sc],
      [scs, sss, ss],
      [sc, ss, n],
    ],
    [xc, xs, x1],
  );
  let sig = 0;
  let err = 0;
  for (let i = 0; i < n; i++) {
    const f = a * Math.cos(w * i) + b * Math.sin(w * i);
    sig += f * f;
    const r = x[i]! - f - k;
    err += r * r;
  }
  return { amplitude: Math.hypot(a, b), snrDb: 10 * Math.log10(sig / Math.max(err, 1e-12)) };
}

function solve3(m: number[][], v: number[]): [number, number, number] {
  const a = m.map((row, i) => [...row, v[i]!]);
  for (let col = 0; col < 3; col++) {
    let piv = col;
    for (let r = col + 1; r < 3; r++) if (Math.abs(a[r]![col]!) > Math.abs(a[piv]![col]!)) piv = r;
    [a[col], a[piv]] = [a[piv]!, a[col]!];
    for (let r = 0; r < 3; r++) {
      if (r === col) continue;
      const f = a[r]![col]! / a[col]![col]!;
      for (let c = col; c < 4; c++) a[r]![c]! -= f * a[col]![c]!;
    }
  }
  return [a[0]![3]! / a[0]![0]!, a[1]![3]! / a[1]![1]!, a[2]![3]! / a[2]![2]!];
}

/** Root-mean-square of samples. */
export function rms(x: Float64Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return Math.sqrt(s / Math.max(1, x.length));
}

/** Value at quantile q (0..1) of the numbers. */
export function quantile(values: readonly number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
