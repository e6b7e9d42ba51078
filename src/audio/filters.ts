/**
 * Filter design for the streaming resampler: one linear-phase lowpass prototype per rate pair, designed
 * once in double precision and cached (every instance of a ratio shares it). Short prototypes are
 * minimax designs (Lawson-weighted least squares, the fewest taps for the spec); half-band and the long
 * prototypes of the 22.05k/44.1k ratios are Kaiser-windowed sincs (see `build`).
 *
 * Model: the input is upsampled by L and the output taken every M samples of the virtual rate
 * F = inRate * L = outRate * M (L/M is the reduced ratio). Output n sits at virtual time n*M and
 * reads input k at virtual time k*L through the prototype h (length N = 2*k*M + 1, centred at
 * D = k*M): its group delay is exactly k output samples, so tests can align outputs to inputs exactly.
 *
 * Spec, scaled by the lower of the two rates R: passband to 0.4375*R (3.5 kHz at 8 kHz), stopband from
 * 0.5625*R (4.5 kHz), cutoff at R/2. For 2:1 and 1:2 that cutoff is F/4 and the windowed sinc is a
 * half-band filter: every other coefficient is exactly zero, which the kernels exploit.
 */

import { MINIMAX_TABLE } from './filters-table.js';
import { RESAMPLER_RATES } from './format.js';

/** Stopband attenuation and passband ripple the Kaiser window is tuned for, in dB (ripple 1e-5). */
export const DESIGN_ATTENUATION_DB = 100;
/** Passband and stopband edges as fractions of the lower rate. */
export const PASSBAND_EDGE = 0.4375;
export const STOPBAND_EDGE = 0.5625;

export type KernelKind = 'halfband-down' | 'halfband-up' | 'polyphase';

export interface FilterDesign {
  readonly inRate: number;
  readonly outRate: number;
  /** Upsampling factor (reduced). */
  readonly L: number;
  /** Downsampling factor (reduced). */
  readonly M: number;
  /** The prototype at the virtual rate, scaled by L (unit DC gain per phase), length 2*delayOut*M + 1. */
  readonly prototype: Float64Array;
  /** Group delay in output samples (the prototype's centre is delayOut * M). */
  readonly delayOut: number;
  /** Taps per polyphase branch (the prototype padded with zeros to L*tapsPerPhase). */
  readonly tapsPerPhase: number;
  /**
   * Branch p holds h[p + i*L] for i = tapsPerPhase-1 .. 0, reversed so that a branch dots forward with
   * the input window x[k - tapsPerPhase + 1 .. k]. Row-major, L rows.
   */
  readonly phases: Float64Array;
  /** For the branch p of one output: the branch of the next output, and how many inputs it moves on. */
  readonly nextPhase: Int32Array;
  readonly advance: Int32Array;
  /** The kernel shape this ratio allows. */
  readonly kind: KernelKind;
  /**
   * Half-band kernels only: the unique non-zero off-centre coefficients g[0..m) (already scaled by L),
   * where m = halfLength. Down: y[n] = c*x[2n-2m] + sum g[j] (x[2n-2m-(2j+1)] + x[2n-2m+(2j+1)]).
   */
  readonly halfband: Float64Array;
  readonly halfLength: number;
  /** Group delay plus the input samples one output may wait for, in milliseconds. */
  readonly latencyMs: number;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** Modified Bessel function of the first kind, order 0 (power series; converges fast for x < 40). */
export function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 200; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

/** Kaiser's beta for a stopband attenuation in dB. */
export function kaiserBeta(attenuationDb: number): number {
  if (attenuationDb > 50) return 0.1102 * (attenuationDb - 8.7);
  if (attenuationDb >= 21) return 0.5842 * (attenuationDb - 21) ** 0.4 + 0.07886 * (attenuationDb - 21);
  return 0;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = Math.PI * x;
  return Math.sin(px) / px;
}

const cache = new Map<string, FilterDesign>();

/** The shared design for a rate pair (rates already validated, and different). */
export function designFilter(inRate: number, outRate: number): FilterDesign {
  const key = `${inRate}->${outRate}`;
  let design = cache.get(key);
  if (design === undefined) {
    design = build(inRate, outRate);
    cache.set(key, design);
  }
  return design;
}

function build(inRate: number, outRate: number): FilterDesign {
  const g = gcd(inRate, outRate);
  const L = outRate / g;
  const M = inRate / g;
  const F = inRate * L;
  const low = Math.min(inRate, outRate);
  const transition = (STOPBAND_EDGE - PASSBAND_EDGE) * low;
  const A = DESIGN_ATTENUATION_DB;
  // Kaiser's length estimate N - 1 >= (A - 7.95) / (2.285 * dw), rounded up to 2*k*M so that the
  // delay is a whole number of output samples.
  const minOrder = (A - 7.95) / (2.285 * ((2 * Math.PI * transition) / F));
  let k = Math.ceil(minOrder / (2 * M));
  const halfbandUp = L === 2 && M === 1;
  const halfbandDown = L === 1 && M === 2;
  const fp = (PASSBAND_EDGE * low) / F;
  const fs = (STOPBAND_EDGE * low) / F;
  // Short prototypes get a minimax design (fewer taps for the same spec, which the benchmark goal on
  // 24k -> 16k needs); the long ones (22.05k and 44.1k ratios, thousands of taps) keep the Kaiser
  // window, whose cost there is in table size, not in taps per output.
  const optimal =
    !halfbandUp && !halfbandDown && 2 * k * M + 1 <= OPTIMAL_MAX_TAPS
      ? minimaxFor(inRate, outRate, fp, fs, M, k)
      : null;
  if (optimal !== null) k = optimal.k;
  // Half-band up: the centre must fall on the copy branch (even delay), so the other branch holds
  // all the non-zero taps symmetrically.
  if (halfbandUp && k % 2 === 1) k++;
  const D = k * M;
  const N = 2 * D + 1;
  const fc = low / 2 / F; // cutoff in cycles per virtual sample
  const beta = kaiserBeta(A);
  const i0b = besselI0(beta);
  const proto = new Float64Array(N);
  let sum = 0;
  // Symmetric about D: compute one half and mirror it (exact symmetry, and half the Bessel series,
  // which dominate the design time of the 22,933-tap prototypes).
  for (let o = 0; o <= D; o++) {
    const t = o / D;
    const w = besselI0(beta * Math.sqrt(Math.max(0, 1 - t * t))) / i0b;
    const v = 2 * fc * sinc(2 * fc * o) * w;
    proto[D + o] = v;
    proto[D - o] = v;
    sum += o === 0 ? v : 2 * v;
  }
  if (optimal !== null) {
    for (let j = 0; j < N; j++) proto[j] = optimal.h[j]! * L;
  } else if (halfbandUp || halfbandDown) {
    // Half-band: exact zeros at even offsets from the centre (sin(pi*j/2) leaves ~1e-17 residues), the
    // centre exactly L/2 (so 1:2 copies every other sample untouched) and the odd taps summing to L/2.
    let odd = 0;
    for (let j = 0; j < N; j++) {
      if ((j - D) % 2 === 0) proto[j] = 0;
      else odd += proto[j]!;
    }
    for (let j = 0; j < N; j++) proto[j] = (proto[j]! * L) / 2 / odd;
    proto[D] = L / 2;
  } else {
    // Unit DC gain per output: the whole prototype sums to L.
    for (let j = 0; j < N; j++) proto[j] = (proto[j]! * L) / sum;
  }

  const T = Math.ceil(N / L);
  const phases = new Float64Array(L * T);
  for (let p = 0; p < L; p++) {
    for (let i = 0; i < T; i++) {
      const j = p + i * L;
      phases[p * T + (T - 1 - i)] = j < N ? proto[j]! : 0;
    }
  }
  const nextPhase = new Int32Array(L);
  const advance = new Int32Array(L);
  for (let p = 0; p < L; p++) {
    nextPhase[p] = (p + M) % L;
    advance[p] = Math.floor((p + M) / L);
  }

  let kind: KernelKind = 'polyphase';
  let m = 0;
  let halfband = new Float64Array(0);
  if (halfbandDown || halfbandUp) {
    kind = halfbandDown ? 'halfband-down' : 'halfband-up';
    m = D / 2;
    halfband = new Float64Array(m);
    // g[j] is the tap at offset 2j+1 from the centre (equal to the one at -(2j+1)).
    for (let j = 0; j < m; j++) halfband[j] = proto[D + 2 * j + 1]!;
  }
  const heldInputs = Math.max(0, Math.ceil(M / L) - 1);
  const latencyMs = (D / F) * 1000 + (heldInputs / inRate) * 1000;
  return {
    inRate,
    outRate,
    L,
    M,
    prototype: proto,
    delayOut: k,
    tapsPerPhase: T,
    phases,
    nextPhase,
    advance,
    kind,
    halfband,
    halfLength: m,
    latencyMs,
  };
}

/** Longest prototype designed by the minimax search (its cost grows with the square of the length). */
const OPTIMAL_MAX_TAPS = 400;
/** What the minimax search must reach: stopband attenuation (dB) and passband ripple (linear). */
const OPTIMAL_STOP_DB = 93;
const OPTIMAL_RIPPLE = 2e-5;

/**
 * The minimax prototype of a rate pair: from the committed table (filters-table.ts) when it is there,
 * because designing costs 100-600 ms cold (measured, loaded machine), too long for the event loop of
 * a session that starts mid-call; else designed now. test/audio/resampler-design.test.ts checks the
 * table against a fresh design.
 */
function minimaxFor(
  inRate: number,
  outRate: number,
  fp: number,
  fs: number,
  M: number,
  kMax: number,
): { k: number; h: Float64Array } | null {
  const row = MINIMAX_TABLE[`${inRate}->${outRate}`];
  if (row === undefined) return minimaxSearch(fp, fs, M, kMax);
  const D = row.half.length - 1;
  const h = new Float64Array(2 * D + 1);
  for (let o = 0; o <= D; o++) {
    h[D + o] = row.half[o]!;
    h[D - o] = row.half[o]!;
  }
  return { k: row.k, h };
}

/** Rate pairs whose prototype is a minimax design (the rest are half-band or long Kaiser designs). */
export function minimaxPairs(): [number, number][] {
  const pairs: [number, number][] = [];
  for (const i of RESAMPLER_RATES) {
    for (const o of RESAMPLER_RATES) {
      if (i === o) continue;
      const g = gcd(i, o);
      const L = o / g;
      const M = i / g;
      if ((L === 2 && M === 1) || (L === 1 && M === 2)) continue;
      const low = Math.min(i, o);
      const F = i * L;
      const minOrder =
        (DESIGN_ATTENUATION_DB - 7.95) /
        (2.285 * ((2 * Math.PI * (STOPBAND_EDGE - PASSBAND_EDGE) * low) / F));
      if (2 * Math.ceil(minOrder / (2 * M)) * M + 1 <= OPTIMAL_MAX_TAPS) pairs.push([i, o]);
    }
  }
  return pairs;
}

/** A fresh minimax design of a pair (ignoring the table): what the table must hold. */
export function designMinimax(inRate: number, outRate: number): { k: number; half: number[] } | null {
  const g = gcd(inRate, outRate);
  const L = outRate / g;
  const M = inRate / g;
  const F = inRate * L;
  const low = Math.min(inRate, outRate);
  const minOrder =
    (DESIGN_ATTENUATION_DB - 7.95) / (2.285 * ((2 * Math.PI * (STOPBAND_EDGE - PASSBAND_EDGE) * low) / F));
  const r = minimaxSearch(
    (PASSBAND_EDGE * low) / F,
    (STOPBAND_EDGE * low) / F,
    M,
    Math.ceil(minOrder / (2 * M)),
  );
  if (r === null) return null;
  const D = (r.h.length - 1) / 2;
  return { k: r.k, half: Array.from(r.h.subarray(D)) };
}

/**
 * The source of filters-table.ts. Regenerate after changing the design:
 *   npx tsx -e "import('./src/audio/filters.ts').then(m => process.stdout.write(m.minimaxTableSource()))" \
 *     > src/audio/filters-table.ts && npx biome check --write src/audio/filters-table.ts
 */
export function minimaxTableSource(): string {
  const rows = minimaxPairs().map(([i, o]) => {
    const d = designMinimax(i, o);
    if (d === null) return '';
    return `  '${i}->${o}': {\n    k: ${d.k},\n    half: [${d.half.map((v) => v.toPrecision(17)).join(', ')}],\n  },\n`;
  });
  return [
    '/**',
    ' * Minimax resampler prototypes, generated by minimaxTableSource() in filters.ts (see there to',
    ' * regenerate): designing them costs 100-600 ms cold, too long for an event loop mid-call. Each row',
    ' * holds k (group delay in output samples) and the centre-out half of the symmetric prototype,',
    ' * h[D..2D] with D = k*M, unit passband gain (filters.ts scales by L). Checked against a fresh design',
    ' * by test/audio/resampler-design.test.ts.',
    ' */',
    'export const MINIMAX_TABLE: Readonly<Record<string, { readonly k: number; readonly half: readonly number[] }>> = {',
    ...rows,
    '};',
    '',
  ].join('\n');
}

/**
 * The shortest prototype of length 2*k*M + 1 (k up to `kMax`, the Kaiser length) whose minimax
 * design meets OPTIMAL_STOP_DB and OPTIMAL_RIPPLE, or null to keep the Kaiser design.
 */
function minimaxSearch(
  fp: number,
  fs: number,
  M: number,
  kMax: number,
): { k: number; h: Float64Array } | null {
  // Start at the equiripple length estimate (Kaiser's formula for equal ripples) and walk up. Design
  // time is paid once per ratio: measured 15-60 ms here (24k -> 16k to 48k -> 8k), hence 15 passes
  // (30 changed the attenuation by under 0.5 dB).
  const est = (-20 * Math.log10(OPTIMAL_RIPPLE) - 13) / (14.6 * (fs - fp));
  // Steps of at least 8 taps: M = 1 ratios would otherwise try every other length.
  const step = Math.max(1, Math.floor(8 / (2 * M)));
  for (let k = Math.max(1, Math.floor(est / (2 * M))); k < kMax; k += step) {
    const r = lawsonLowpass(2 * k * M + 1, fp, fs);
    if (r.stop <= 10 ** (-OPTIMAL_STOP_DB / 20) && r.ripple <= OPTIMAL_RIPPLE) return { k, h: r.h };
  }
  return null;
}

/**
 * Linear-phase lowpass of odd length N, passband [0, fp], stopband [fs, 0.5] (cycles per sample), unit
 * passband gain: weighted least squares on a grid, re-weighted by Lawson's rule (w *= |error|), which
 * converges toward the minimax (equiripple) solution. The normal equations of a cosine basis only need
 * the weighted moments sum(w cos(m w_k)), so each pass is O(grid * N) plus an O(N^3 / 6) Cholesky.
 */
export function lawsonLowpass(
  N: number,
  fp: number,
  fs: number,
  passes = 15,
): { h: Float64Array; ripple: number; stop: number } {
  const D = (N - 1) / 2;
  const K = D + 1;
  const G = 12 * K;
  const gp = Math.max(8, Math.round((G * fp) / (fp + 0.5 - fs)));
  const gs = Math.max(8, G - gp);
  const P = gp + gs;
  const om = new Float64Array(P);
  const pass = new Uint8Array(P);
  for (let i = 0; i < gp; i++) {
    om[i] = (2 * Math.PI * fp * i) / (gp - 1);
    pass[i] = 1;
  }
  for (let i = 0; i < gs; i++) om[gp + i] = 2 * Math.PI * (fs + ((0.5 - fs) * i) / (gs - 1));
  // cos(m * om[k]) for m = 0..2D by the Chebyshev recurrence, row-major.
  const cosTab = new Float64Array(P * (2 * D + 1));
  for (let k = 0; k < P; k++) {
    const row = k * (2 * D + 1);
    const c1 = Math.cos(om[k]!);
    cosTab[row] = 1;
    if (D > 0) cosTab[row + 1] = c1;
    for (let m = 2; m <= 2 * D; m++) cosTab[row + m] = 2 * c1 * cosTab[row + m - 1]! - cosTab[row + m - 2]!;
  }
  const w = new Float64Array(P).fill(1);
  const a = new Float64Array(K);
  const A = new Float64Array(K * K);
  const b = new Float64Array(K);
  const mu = new Float64Array(2 * D + 1);
  const err = new Float64Array(P);
  let ripple = 0;
  let stop = 0;
  for (let it = 0; it < passes; it++) {
    mu.fill(0);
    b.fill(0);
    for (let k = 0; k < P; k++) {
      const row = k * (2 * D + 1);
      const wk = w[k]!;
      for (let m = 0; m <= 2 * D; m++) mu[m] = mu[m]! + wk * cosTab[row + m]!;
      if (pass[k]) for (let r = 0; r < K; r++) b[r] = b[r]! + wk * (r === 0 ? 1 : 2 * cosTab[row + r]!);
    }
    // Basis 1, 2cos(w), 2cos(2w)...: <2cos(rw), 2cos(cw)> = 2 (mu[r-c] + mu[r+c]).
    for (let r = 0; r < K; r++) {
      for (let c = 0; c <= r; c++) {
        const v = r === 0 ? mu[0]! : c === 0 ? 2 * mu[r]! : 2 * (mu[r - c]! + mu[r + c]!);
        A[r * K + c] = v;
        A[c * K + r] = v;
      }
    }
    choleskySolve(A, b, a, K);
    ripple = 0;
    stop = 0;
    let total = 0;
    for (let k = 0; k < P; k++) {
      const row = k * (2 * D + 1);
      let h = a[0]!;
      for (let o = 1; o < K; o++) h += 2 * a[o]! * cosTab[row + o]!;
      const e = Math.abs(h - pass[k]!);
      err[k] = e;
      if (pass[k]) ripple = Math.max(ripple, e);
      else stop = Math.max(stop, e);
    }
    for (let k = 0; k < P; k++) {
      w[k] = w[k]! * err[k]!;
      total += w[k]!;
    }
    for (let k = 0; k < P; k++) w[k] = (w[k]! * P) / total;
  }
  const h = new Float64Array(N);
  for (let o = 0; o <= D; o++) {
    h[D + o] = a[o]!;
    h[D - o] = a[o]!;
  }
  return { h, ripple, stop };
}

/** Solves A x = b for symmetric positive definite A (K x K, row-major); A is overwritten. */
function choleskySolve(A: Float64Array, b: Float64Array, x: Float64Array, K: number): void {
  for (let i = 0; i < K; i++) {
    for (let j = 0; j <= i; j++) {
      let s = A[i * K + j]!;
      for (let k = 0; k < j; k++) s -= A[i * K + k]! * A[j * K + k]!;
      A[i * K + j] = i === j ? Math.sqrt(Math.max(s, 1e-300)) : s / A[j * K + j]!;
    }
  }
  for (let i = 0; i < K; i++) {
    let s = b[i]!;
    for (let k = 0; k < i; k++) s -= A[i * K + k]! * x[k]!;
    x[i] = s / A[i * K + i]!;
  }
  for (let i = K - 1; i >= 0; i--) {
    let s = x[i]!;
    for (let k = i + 1; k < K; k++) s -= A[k * K + i]! * x[k]!;
    x[i] = s / A[i * K + i]!;
  }
}

/** Magnitude response of the prototype at `hz` (virtual rate F), divided by L: 1 in the passband. */
export function prototypeGain(design: FilterDesign, hz: number): number {
  const F = design.inRate * design.L;
  const w = (2 * Math.PI * hz) / F;
  const D = design.delayOut * design.M;
  // Linear phase: the response is real after removing the delay; sum pairs about the centre.
  const h = design.prototype;
  let acc = h[D]!;
  for (let o = 1; o <= D; o++) acc += 2 * h[D + o]! * Math.cos(w * o);
  return Math.abs(acc) / design.L;
}
