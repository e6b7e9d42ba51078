// The resampler's WebAssembly SIMD kernels (AssemblyScript; built by scripts/build-wasm.mjs into
// resampler.wasm). Kept as `.as` so the project's TypeScript and lint do not read it as TypeScript.
//
// Memory is managed from JavaScript (src/audio/resampler-wasm.ts): `alloc` bumps (stub runtime) and JS
// recycles freed blocks by size. Each instance is a 16-byte header of i32 fields followed by float32
// buffers; each call appends one block of PCM16 input, emits every output whose inputs have arrived
// into a PCM16 scratch, and compacts the history. Samples are kept in PCM16 units (no scaling), so
// int16 -> f32 is exact, and output is round-to-nearest-even then saturated.
//
// Bit-identical output at any chunking: every output sample is computed by the same sequence of f32
// operations whether it comes from a 4/8-lane SIMD group or the scalar tail (lanes are outputs, taps
// are summed in the same order), and f32x4 add/mul are lane-wise IEEE like f32 add/mul (no FMA).

const F0: usize = 0; // i32: fill (polyphase, half-band up) or count of even inputs (half-band down)
const F1: usize = 4; // i32: count of odd inputs (half-band down)
const NEXT: usize = 8; // i32: buffer index of the next output's newest input (or its centre)
const PHASE: usize = 12; // i32: branch of the next output (polyphase) or parity of the next input
const HEADER: usize = 16;

export function alloc(bytes: i32): usize {
  return heap.alloc(<usize>bytes);
}

@inline function pcm(v: f32): i16 {
  const r = <i32>nearest<f32>(v);
  return <i16>(r > 32767 ? 32767 : r < -32768 ? -32768 : r);
}

/** Four lanes to four PCM16 samples: the same rounding and saturation as `pcm`. */
@inline function store4(p: usize, v: v128): void {
  const r = i32x4.trunc_sat_f32x4_s(f32x4.nearest(v));
  v128.store64_lane(p, i16x8.narrow_i32x4_s(r, r), 0);
}

/** Eight 1:2 outputs: the centre copies x[mid..mid+3] interleaved with the four computed `odd`. */
@inline function upStore(p: usize, mid: usize, odd: v128): void {
  const o = i32x4.trunc_sat_f32x4_s(f32x4.nearest(odd));
  const e = i32x4.trunc_sat_f32x4_s(v128.load(mid));
  const packed = i16x8.narrow_i32x4_s(e, o);
  v128.store(p, i16x8.shuffle(packed, packed, 0, 4, 1, 5, 2, 6, 3, 7));
}

/** PCM16 -> f32, eight at a time. */
function widen(dst: usize, src: usize, n: i32): void {
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const v = v128.load(src + (<usize>i << 1));
    v128.store(dst + (<usize>i << 2), f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(v)));
    v128.store(dst + (<usize>i << 2), f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(v)), 16);
  }
  for (; i < n; i++) store<f32>(dst + (<usize>i << 2), <f32>load<i16>(src + (<usize>i << 1)));
}

/**
 * Any ratio: one dot product per output over `tp` taps (a multiple of 16) of the output's branch,
 * four accumulators to hide add latency, then a fixed-order horizontal sum.
 */
export function polyphase(
  st: usize, coef: usize, nextPhase: usize, advance: usize, tp: i32, src: usize, n: i32, out: usize,
): i32 {
  let fill = load<i32>(st, F0);
  let need = load<i32>(st, NEXT);
  let p = load<i32>(st, PHASE);
  const buf = st + HEADER;
  widen(buf + (<usize>fill << 2), src, n);
  fill += n;
  const rowBytes = <usize>tp << 2;
  let w: usize = 0;
  while (need < fill) {
    const c = coef + <usize>p * rowBytes;
    const x = buf + (<usize>(need - tp + 1) << 2);
    let a0 = f32x4.mul(v128.load(c), v128.load(x));
    let a1 = f32x4.mul(v128.load(c, 16), v128.load(x, 16));
    let a2 = f32x4.mul(v128.load(c, 32), v128.load(x, 32));
    let a3 = f32x4.mul(v128.load(c, 48), v128.load(x, 48));
    for (let i: usize = 64; i < rowBytes; i += 64) {
      a0 = f32x4.add(a0, f32x4.mul(v128.load(c + i), v128.load(x + i)));
      a1 = f32x4.add(a1, f32x4.mul(v128.load(c + i, 16), v128.load(x + i, 16)));
      a2 = f32x4.add(a2, f32x4.mul(v128.load(c + i, 32), v128.load(x + i, 32)));
      a3 = f32x4.add(a3, f32x4.mul(v128.load(c + i, 48), v128.load(x + i, 48)));
    }
    const s = f32x4.add(f32x4.add(a0, a1), f32x4.add(a2, a3));
    const v =
      f32x4.extract_lane(s, 0) + f32x4.extract_lane(s, 2) + (f32x4.extract_lane(s, 1) + f32x4.extract_lane(s, 3));
    store<i16>(out + (w << 1), pcm(v));
    w++;
    need += load<i32>(advance + (<usize>p << 2));
    p = load<i32>(nextPhase + (<usize>p << 2));
  }
  const start = need - tp + 1;
  if (start > 0) {
    memory.copy(buf, buf + (<usize>start << 2), <usize>(fill - start) << 2);
    fill -= start;
    need -= start;
  }
  store<i32>(st, fill, F0);
  store<i32>(st, need, NEXT);
  store<i32>(st, p, PHASE);
  return <i32>w;
}

/**
 * 2:1 down with a half-band filter. Inputs are split into even (E) and odd (O) streams so that four
 * consecutive outputs read four consecutive floats of each:
 *   y[q] = 0.5 * E[q - m] + sum_j g[j] * (O[q - m - 1 - j] + O[q - m + j]),
 * folded (one multiply per coefficient pair) and with outputs in lanes (no horizontal sums).
 */
export function halfbandDown(st: usize, g: usize, m: i32, cap: i32, src: usize, n: i32, out: usize): i32 {
  let ne = load<i32>(st, F0);
  let no = load<i32>(st, F1);
  let q = load<i32>(st, NEXT);
  let parity = load<i32>(st, PHASE);
  const E = st + HEADER;
  const O = E + (<usize>cap << 2);
  let i = 0;
  if (parity == 1 && n > 0) {
    store<f32>(O + (<usize>no << 2), <f32>load<i16>(src));
    no++;
    i = 1;
  }
  // Eight inputs at a time: widen, then split even and odd lanes (16k -> 8k in 20 ms chunks measured
  // best 25.9k x realtime with it against 11-20k without, on a noisy shared machine).
  for (; i + 8 <= n; i += 8) {
    const v = v128.load(src + (<usize>i << 1));
    const a = f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(v));
    const b = f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(v));
    v128.store(E + (<usize>ne << 2), i32x4.shuffle(a, b, 0, 2, 4, 6));
    v128.store(O + (<usize>no << 2), i32x4.shuffle(a, b, 1, 3, 5, 7));
    ne += 4;
    no += 4;
  }
  for (; i + 1 < n; i += 2) {
    store<f32>(E + (<usize>ne << 2), <f32>load<i16>(src + (<usize>i << 1)));
    store<f32>(O + (<usize>no << 2), <f32>load<i16>(src + (<usize>i << 1), 2));
    ne++;
    no++;
  }
  if (i < n) {
    store<f32>(E + (<usize>ne << 2), <f32>load<i16>(src + (<usize>i << 1)));
    ne++;
  }
  parity = (parity + n) & 1;

  const half = f32x4.splat(0.5);
  const mb = <usize>m << 2;
  let w: usize = 0;
  // Sixteen outputs per pass: four independent accumulators, so the adds do not wait on each other
  // (one accumulator measured latency-bound).
  while (q + 16 <= ne) {
    const e = E + (<usize>q << 2) - mb;
    const lo = O + (<usize>q << 2) - mb - 4;
    const hi = O + (<usize>q << 2) - mb;
    let a = f32x4.mul(half, v128.load(e));
    let b = f32x4.mul(half, v128.load(e, 16));
    let c2 = f32x4.mul(half, v128.load(e, 32));
    let d = f32x4.mul(half, v128.load(e, 48));
    for (let j: usize = 0; j < mb; j += 4) {
      const c = v128.load32_splat(g + j);
      const l = lo - j;
      const h = hi + j;
      a = f32x4.add(a, f32x4.mul(c, f32x4.add(v128.load(l), v128.load(h))));
      b = f32x4.add(b, f32x4.mul(c, f32x4.add(v128.load(l, 16), v128.load(h, 16))));
      c2 = f32x4.add(c2, f32x4.mul(c, f32x4.add(v128.load(l, 32), v128.load(h, 32))));
      d = f32x4.add(d, f32x4.mul(c, f32x4.add(v128.load(l, 48), v128.load(h, 48))));
    }
    const o = out + (w << 1);
    store4(o, a);
    store4(o + 8, b);
    store4(o + 16, c2);
    store4(o + 24, d);
    q += 16;
    w += 16;
  }
  while (q + 4 <= ne) {
    const e = E + (<usize>q << 2) - mb;
    const lo = O + (<usize>q << 2) - mb - 4;
    const hi = O + (<usize>q << 2) - mb;
    let a = f32x4.mul(half, v128.load(e));
    for (let j: usize = 0; j < mb; j += 4) {
      a = f32x4.add(a, f32x4.mul(v128.load32_splat(g + j), f32x4.add(v128.load(lo - j), v128.load(hi + j))));
    }
    store4(out + (w << 1), a);
    q += 4;
    w += 4;
  }
  while (q < ne) {
    const e = E + (<usize>q << 2) - mb;
    const lo = O + (<usize>q << 2) - mb - 4;
    const hi = O + (<usize>q << 2) - mb;
    let a: f32 = <f32>0.5 * load<f32>(e);
    for (let j: usize = 0; j < mb; j += 4) a += load<f32>(g + j) * (load<f32>(lo - j) + load<f32>(hi + j));
    store<i16>(out + (w << 1), pcm(a));
    q++;
    w++;
  }
  // Keep from the oldest odd sample the next output reads, O[q - 2m] (and E alike).
  const shift = q - 2 * m;
  if (shift > 0) {
    memory.copy(E, E + (<usize>shift << 2), <usize>(ne - shift) << 2);
    memory.copy(O, O + (<usize>shift << 2), <usize>(no - shift) << 2);
    ne -= shift;
    no -= shift;
    q -= shift;
  }
  store<i32>(st, ne, F0);
  store<i32>(st, no, F1);
  store<i32>(st, q, NEXT);
  store<i32>(st, parity, PHASE);
  return <i32>w;
}

/**
 * 1:2 up with a half-band filter. Each input q gives two outputs: the centre tap alone (a copy of
 * x[q - m]) and y = sum_j g[j] * (x[q - m + 1 + j] + x[q - m - j]) (folded, outputs in lanes).
 */
export function halfbandUp(st: usize, g: usize, m: i32, src: usize, n: i32, out: usize): i32 {
  let fill = load<i32>(st, F0);
  let q = load<i32>(st, NEXT);
  const X = st + HEADER;
  widen(X + (<usize>fill << 2), src, n);
  fill += n;
  const mb = <usize>m << 2;
  let w: usize = 0;
  // Sixteen inputs (32 outputs) per pass, four independent accumulators; then four at a time.
  while (q + 16 <= fill) {
    const mid = X + (<usize>q << 2) - mb;
    const c0 = v128.load32_splat(g);
    let a = f32x4.mul(c0, f32x4.add(v128.load(mid, 4), v128.load(mid)));
    let b = f32x4.mul(c0, f32x4.add(v128.load(mid, 20), v128.load(mid, 16)));
    let c2 = f32x4.mul(c0, f32x4.add(v128.load(mid, 36), v128.load(mid, 32)));
    let d = f32x4.mul(c0, f32x4.add(v128.load(mid, 52), v128.load(mid, 48)));
    for (let j: usize = 4; j < mb; j += 4) {
      const c = v128.load32_splat(g + j);
      const up = mid + 4 + j;
      const dn = mid - j;
      a = f32x4.add(a, f32x4.mul(c, f32x4.add(v128.load(up), v128.load(dn))));
      b = f32x4.add(b, f32x4.mul(c, f32x4.add(v128.load(up, 16), v128.load(dn, 16))));
      c2 = f32x4.add(c2, f32x4.mul(c, f32x4.add(v128.load(up, 32), v128.load(dn, 32))));
      d = f32x4.add(d, f32x4.mul(c, f32x4.add(v128.load(up, 48), v128.load(dn, 48))));
    }
    const o = out + (w << 1);
    upStore(o, mid, a);
    upStore(o + 16, mid + 16, b);
    upStore(o + 32, mid + 32, c2);
    upStore(o + 48, mid + 48, d);
    q += 16;
    w += 32;
  }
  while (q + 4 <= fill) {
    const mid = X + (<usize>q << 2) - mb;
    let a = f32x4.mul(v128.load32_splat(g), f32x4.add(v128.load(mid, 4), v128.load(mid)));
    for (let j: usize = 4; j < mb; j += 4) {
      a = f32x4.add(a, f32x4.mul(v128.load32_splat(g + j), f32x4.add(v128.load(mid + 4 + j), v128.load(mid - j))));
    }
    upStore(out + (w << 1), mid, a);
    q += 4;
    w += 8;
  }
  while (q < fill) {
    const mid = X + (<usize>q << 2) - mb;
    let a: f32 = load<f32>(g) * (load<f32>(mid, 4) + load<f32>(mid));
    for (let j: usize = 4; j < mb; j += 4) a += load<f32>(g + j) * (load<f32>(mid + 4 + j) + load<f32>(mid - j));
    store<i16>(out + (w << 1), <i16>(<i32>load<f32>(mid)));
    store<i16>(out + (w << 1), pcm(a), 2);
    q++;
    w += 2;
  }
  const shift = q - 2 * m + 1;
  if (shift > 0) {
    memory.copy(X, X + (<usize>shift << 2), <usize>(fill - shift) << 2);
    fill -= shift;
    q -= shift;
  }
  store<i32>(st, fill, F0);
  store<i32>(st, q, NEXT);
  return <i32>w;
}

/** Input `fill + i` to stream (fill + i) % M, group (fill + i) / M, one sample at a time. */
function splitAny(S: usize, capBytes: usize, M: i32, fill: i32, src: usize, n: i32): void {
  for (let s = 0; s < M; s++) {
    const i0 = (s - (fill % M) + M) % M;
    let dst = S + <usize>s * capBytes + (<usize>((fill + i0) / M) << 2);
    for (let i = i0; i < n; i += M) {
      store<f32>(dst, <f32>load<i16>(src + (<usize>i << 1)));
      dst += 4;
    }
  }
}

/**
 * The same for M = 3 (24 kHz in), twelve inputs at a time by shuffles. By operation count the
 * one-at-a-time split was about a fifth of a 20 ms chunk's work on 24k -> 16k; the measured gain was
 * within this shared machine's noise (A/B, 00:50 UTC), so this is kept for the operation count only.
 */
function split3(S: usize, capBytes: usize, fill: i32, src: usize, n: i32): void {
  let i = 0;
  // One at a time up to a group boundary.
  while (i < n && (fill + i) % 3 != 0) {
    const f = fill + i;
    store<f32>(S + <usize>(f % 3) * capBytes + (<usize>(f / 3) << 2), <f32>load<i16>(src + (<usize>i << 1)));
    i++;
  }
  let g = <usize>((fill + i) / 3) << 2;
  for (; i + 12 <= n; i += 12) {
    const v = v128.load(src + (<usize>i << 1));
    const A = f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(v));
    const B = f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(v));
    const C = f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(v128.load64_zero(src + (<usize>i << 1), 16)));
    v128.store(S + g, i32x4.shuffle(i32x4.shuffle(A, B, 0, 3, 6, 7), C, 0, 1, 2, 5));
    v128.store(S + capBytes + g, i32x4.shuffle(i32x4.shuffle(A, B, 1, 4, 7, 7), C, 0, 1, 2, 6));
    v128.store(S + 2 * capBytes + g, i32x4.shuffle(i32x4.shuffle(A, B, 2, 5, 5, 5), C, 0, 1, 4, 7));
    g += 16;
  }
  for (; i < n; i++) {
    const f = fill + i;
    store<f32>(S + <usize>(f % 3) * capBytes + (<usize>(f / 3) << 2), <f32>load<i16>(src + (<usize>i << 1)));
  }
}

/** One output of the lanes kernel: the same operations, in the same order, as one lane of a pass. */
function laneOne(base: usize, classes: usize, M: i32): f32 {
  let a: f32 = 0;
  for (let k = 0; k < M; k++) {
    const cls = classes + (<usize>k << 4);
    let pa = base + <usize>load<i32>(cls);
    let pb = base + <usize>load<i32>(cls, 4);
    let cp = <usize>load<i32>(cls, 12);
    const end = cp + (<usize>load<i32>(cls, 8) << 2);
    for (; cp < end; cp += 4) {
      a += load<f32>(cp) * (load<f32>(pa) + load<f32>(pb));
      pa -= 4;
      pb += 4;
    }
  }
  return a;
}

/**
 * Decimating ratios whose branches are each symmetric (L = 1 or 2: 24k -> 16k, 24k -> 8k, 48k -> 16k,
 * 48k -> 8k). Inputs are split into M streams S_r[g] = x[M*g + r], so the outputs of one branch in
 * consecutive groups read consecutive floats of a stream: outputs in lanes (16 per pass), folded taps
 * (one multiply per mirrored pair), no horizontal sums. Measured: twice the plain polyphase kernel's
 * speed on 24k -> 16k, which the benchmark goal needs.
 *
 * Taps are walked by residue class, so addresses move by one float per tap with no table lookups:
 * `info` holds per branch p: i32 e0 (output group u's newest input is x[M*u + e0]), then M classes of
 * (i32 offA, i32 offB, i32 count, i32 coef pointer). Class term t adds
 * c[t] * (S[offA + 4u - 4t] + S[offB + 4u + 4t]) (byte offsets from the streams' base). A lone
 * centre tap is (c/2, off, off), which is exact. Branch record size: 4 + 16*M bytes.
 */
export function lanes(st: usize, info: usize, L: i32, M: i32, cap: i32, src: usize, n: i32, out: usize): i32 {
  let fill = load<i32>(st, F0); // inputs held, counted from group 0 of the buffer
  let u = load<i32>(st, NEXT); // group of the next output
  let p = load<i32>(st, PHASE); // its branch
  const S = st + HEADER;
  const capBytes = <usize>cap << 2;
  // De-interleave: input `fill + i` goes to stream (fill + i) % M, group (fill + i) / M.
  if (M == 3) {
    split3(S, capBytes, fill, src, n);
  } else {
    splitAny(S, capBytes, M, fill, src, n);
  }
  fill += n;
  const rec = 4 + 16 * <usize>M;
  const lastE0 = load<i32>(info + <usize>(L - 1) * rec);
  let w: usize = 0;
  // Finish a group a previous call left part-done, so that the passes below start on branch 0.
  while (p != 0 && M * u + load<i32>(info + <usize>p * rec) < fill) {
    store<i16>(out + (w << 1), pcm(laneOne(S + (<usize>u << 2), info + <usize>p * rec + 4, M)));
    w++;
    p++;
    if (p == L) {
      p = 0;
      u++;
    }
  }
  // Whole groups, sixteen at a time, while the last branch of the sixteenth group has its input.
  while (p == 0 && M * (u + 15) + lastE0 < fill) {
    const base = S + (<usize>u << 2);
    let b0 = v128.splat<i32>(0);
    let b1 = v128.splat<i32>(0);
    let c0 = v128.splat<i32>(0);
    let c1 = v128.splat<i32>(0);
    for (let b = 0; b < L; b++) {
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      const classes = info + <usize>b * rec + 4;
      for (let k = 0; k < M; k++) {
        const cls = classes + (<usize>k << 4);
        let pa = base + <usize>load<i32>(cls);
        let pb = base + <usize>load<i32>(cls, 4);
        const count = load<i32>(cls, 8);
        let cp = <usize>load<i32>(cls, 12);
        const end = cp + (<usize>count << 2);
        for (; cp < end; cp += 4) {
          const c = v128.load32_splat(cp);
          a0 = f32x4.add(a0, f32x4.mul(c, f32x4.add(v128.load(pa), v128.load(pb))));
          a1 = f32x4.add(a1, f32x4.mul(c, f32x4.add(v128.load(pa, 16), v128.load(pb, 16))));
          a2 = f32x4.add(a2, f32x4.mul(c, f32x4.add(v128.load(pa, 32), v128.load(pb, 32))));
          a3 = f32x4.add(a3, f32x4.mul(c, f32x4.add(v128.load(pa, 48), v128.load(pb, 48))));
          pa -= 4;
          pb += 4;
        }
      }
      const lo = i16x8.narrow_i32x4_s(
        i32x4.trunc_sat_f32x4_s(f32x4.nearest(a0)),
        i32x4.trunc_sat_f32x4_s(f32x4.nearest(a1)),
      );
      const hi = i16x8.narrow_i32x4_s(
        i32x4.trunc_sat_f32x4_s(f32x4.nearest(a2)),
        i32x4.trunc_sat_f32x4_s(f32x4.nearest(a3)),
      );
      if (b == 0) {
        b0 = lo;
        b1 = hi;
      } else {
        c0 = lo;
        c1 = hi;
      }
    }
    const o = out + (w << 1);
    if (L == 1) {
      v128.store(o, b0);
      v128.store(o, b1, 16);
    } else {
      // Branch 0 gives outputs 2u.., branch 1 outputs 2u+1..: interleave.
      v128.store(o, i16x8.shuffle(b0, c0, 0, 8, 1, 9, 2, 10, 3, 11));
      v128.store(o, i16x8.shuffle(b0, c0, 4, 12, 5, 13, 6, 14, 7, 15), 16);
      v128.store(o, i16x8.shuffle(b1, c1, 0, 8, 1, 9, 2, 10, 3, 11), 32);
      v128.store(o, i16x8.shuffle(b1, c1, 4, 12, 5, 13, 6, 14, 7, 15), 48);
    }
    u += 16;
    w += <usize>(16 * L);
  }
  // Then four groups at a time: chunk ends need not fall on 16 groups.
  while (p == 0 && M * (u + 3) + lastE0 < fill) {
    const base = S + (<usize>u << 2);
    let b0 = v128.splat<i32>(0);
    let c0 = v128.splat<i32>(0);
    for (let b = 0; b < L; b++) {
      let a0 = f32x4.splat(0);
      const classes = info + <usize>b * rec + 4;
      for (let k = 0; k < M; k++) {
        const cls = classes + (<usize>k << 4);
        let pa = base + <usize>load<i32>(cls);
        let pb = base + <usize>load<i32>(cls, 4);
        let cp = <usize>load<i32>(cls, 12);
        const end = cp + (<usize>load<i32>(cls, 8) << 2);
        for (; cp < end; cp += 4) {
          a0 = f32x4.add(a0, f32x4.mul(v128.load32_splat(cp), f32x4.add(v128.load(pa), v128.load(pb))));
          pa -= 4;
          pb += 4;
        }
      }
      const r0 = i32x4.trunc_sat_f32x4_s(f32x4.nearest(a0));
      if (b == 0) b0 = i16x8.narrow_i32x4_s(r0, r0);
      else c0 = i16x8.narrow_i32x4_s(r0, r0);
    }
    if (L == 1) v128.store64_lane(out + (w << 1), b0, 0);
    else v128.store(out + (w << 1), i16x8.shuffle(b0, c0, 0, 8, 1, 9, 2, 10, 3, 11));
    u += 4;
    w += <usize>(4 * L);
  }
  // The rest one output at a time.
  while (M * u + load<i32>(info + <usize>p * rec) < fill) {
    store<i16>(out + (w << 1), pcm(laneOne(S + (<usize>u << 2), info + <usize>p * rec + 4, M)));
    w++;
    p++;
    if (p == L) {
      p = 0;
      u++;
    }
  }
  // Keep `hist` groups before the next output's group.
  const hist = load<i32>(st, F1);
  const shift = u - hist;
  if (shift > 0) {
    const groups = (fill + M - 1) / M - shift;
    for (let s = 0; s < M; s++) {
      const b = S + <usize>s * capBytes;
      memory.copy(b, b + (<usize>shift << 2), <usize>groups << 2);
    }
    u -= shift;
    fill -= shift * M;
  }
  store<i32>(st, fill, F0);
  store<i32>(st, u, NEXT);
  store<i32>(st, p, PHASE);
  return <i32>w;
}
