/**
 * The WebAssembly SIMD resampler: the kernels in ./wasm/resampler.as (built by scripts/build-wasm.mjs),
 * loaded synchronously on first use. Filter tables live once per rate pair in linear memory; each
 * instance owns a few KB of header and history there. Input and output cross through one shared
 * scratch region (calls are synchronous, so instances never overlap in it).
 */
import { readFileSync } from 'node:fs';
import type { FilterDesign } from './filters.js';
import type { Resampler } from './resampler-types.js';

/**
 * Input samples per kernel call; bounds each instance's history buffer (about 2 KB + taps: every live
 * call holds two). Larger inputs are split. 512 covers a 20 ms chunk unsplit at every rate up to
 * 24 kHz; a 20 ms chunk at 44.1 or 48 kHz goes in two calls (measured 48k -> 16k at 5.6 against 5.1 us
 * per chunk with 2,048, within this machine's noise). With 2,048 it was ~8 KB an instance: 35 KB of
 * WebAssembly memory per call for the two directions, against 11 KB now.
 */
const BLOCK = 512;
/** Largest ratio among the supported rates (8000 -> 48000). */
const MAX_RATIO = 6;
const HEADER = 16;
/**
 * Output samples each instance has room for in linear memory of its own (2 KB: 20 ms at 48 kHz), so
 * `processBytes` can hand out a view of it that no other instance's call overwrites.
 */
const OWN_OUT = 1024;
/**
 * Input samples the shared input scratch holds (8 KB): `processBytes` copies a chunk of up to this many
 * in at once and runs the kernel over it in pieces, so a 20 ms chunk at 44.1 or 48 kHz (longer than a
 * kernel call takes) costs no view per piece.
 */
const IN_SCRATCH = 4096;

// The project compiles without the DOM lib, where the WebAssembly JS API is typed; the few members used.
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: unknown };
}
const WasmJs = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface Kernel {
  readonly memory: { readonly buffer: ArrayBuffer };
  alloc(bytes: number): number;
  polyphase(
    st: number,
    coef: number,
    nextPhase: number,
    advance: number,
    tp: number,
    src: number,
    n: number,
    out: number,
  ): number;
  halfbandDown(st: number, g: number, m: number, cap: number, src: number, n: number, out: number): number;
  halfbandUp(st: number, g: number, m: number, src: number, n: number, out: number): number;
  lanes(
    st: number,
    info: number,
    L: number,
    M: number,
    cap: number,
    src: number,
    n: number,
    out: number,
  ): number;
}

/**
 * The module, its views (re-taken whenever memory grows), the I/O scratch and a size-class free list.
 * Memory grows only in `alloc` (the kernels allocate nothing), so the views are re-taken there and
 * nowhere else. The kernels are kept as fields: a load from the module's exports object is a generic
 * property lookup every time, measured at a few per cent of the bridge's main thread.
 */
class Runtime {
  readonly k: Kernel;
  readonly polyphase: Kernel['polyphase'];
  readonly halfbandDown: Kernel['halfbandDown'];
  readonly halfbandUp: Kernel['halfbandUp'];
  readonly lanes: Kernel['lanes'];
  f32: Float32Array;
  i16: Int16Array;
  i32: Int32Array;
  u8: Uint8Array;
  readonly inPtr: number;
  readonly outPtr: number;
  private readonly freeBlocks = new Map<number, number[]>();
  /** Views of the output scratch by length, so copying out allocates nothing after the first call. */
  private outViews: Int16Array[] = [];
  /** Counts memory growths: a view taken before one is detached. */
  generation = 0;

  constructor(k: Kernel) {
    this.k = k;
    this.polyphase = k.polyphase;
    this.halfbandDown = k.halfbandDown;
    this.halfbandUp = k.halfbandUp;
    this.lanes = k.lanes;
    this.f32 = new Float32Array(0);
    this.i16 = new Int16Array(0);
    this.i32 = new Int32Array(0);
    this.u8 = new Uint8Array(0);
    this.inPtr = k.alloc(IN_SCRATCH * 2);
    this.outPtr = k.alloc(BLOCK * MAX_RATIO * 2 + 16);
    this.refresh();
  }

  /** Memory growth detaches the old buffer: re-take the views (after `alloc`, the one place it grows). */
  private refresh(): void {
    const buf = this.k.memory.buffer;
    if (this.f32.buffer === buf) return;
    this.f32 = new Float32Array(buf);
    this.i16 = new Int16Array(buf);
    this.i32 = new Int32Array(buf);
    this.u8 = new Uint8Array(buf);
    this.outViews = [];
    this.generation++;
  }

  outView(n: number): Int16Array {
    let v = this.outViews[n];
    if (v === undefined) {
      v = new Int16Array(this.k.memory.buffer, this.outPtr, n);
      this.outViews[n] = v;
    }
    return v;
  }

  /** 16-byte aligned, zeroed. Freed blocks are reused by exact size (instances of one ratio match). */
  alloc(bytes: number): number {
    const size = (bytes + 15) & ~15;
    const ptr = this.freeBlocks.get(size)?.pop() ?? this.k.alloc(size);
    this.refresh();
    this.f32.fill(0, ptr >> 2, (ptr + size) >> 2);
    return ptr;
  }

  release(ptr: number, bytes: number): void {
    const size = (bytes + 15) & ~15;
    let list = this.freeBlocks.get(size);
    if (list === undefined) {
      list = [];
      this.freeBlocks.set(size, list);
    }
    list.push(ptr);
  }
}

let runtime: Runtime | null | undefined;
let loadError: unknown;

function load(): Runtime | null {
  if (runtime !== undefined) return runtime;
  try {
    const bytes = readFileSync(new URL('./wasm/resampler.wasm', import.meta.url));
    const module = new WasmJs.Module(bytes);
    const instance = new WasmJs.Instance(module, {
      env: {
        abort: () => {
          throw new Error('resampler kernel aborted');
        },
      },
    });
    runtime = new Runtime(instance.exports as unknown as Kernel);
  } catch (err) {
    // No built module (installed with --ignore-scripts) or no WebAssembly SIMD: the JS fallback serves.
    loadError = err;
    runtime = null;
  }
  return runtime;
}

/** Whether the WebAssembly SIMD kernel loads here. */
export function wasmAvailable(): boolean {
  return load() !== null;
}

/** Per-ratio tables in linear memory, shared by every instance of the ratio. */
interface Tables {
  readonly coef: number;
  readonly nextPhase: number;
  readonly advance: number;
  /** Taps per branch padded to a multiple of 16 (zeros first, so windows stay aligned to the newest input). */
  readonly tp: number;
  readonly g: number;
  /** Lanes kernel: branch table, stream capacity (groups) and history kept (groups). */
  readonly info: number;
  readonly streamCap: number;
  readonly hist: number;
}

/** L = 1 or 2 and no half-band: each branch is symmetric, so the folded lanes kernel applies. */
function useLanes(d: FilterDesign): boolean {
  return d.kind === 'polyphase' && (d.L === 1 || d.L === 2) && d.M >= 3;
}

/**
 * Tables of the lanes kernel (see lanes() in wasm/resampler.as): for branch p, tap i and its mirror
 * share a multiply; tap i reads x[M*u + e0 - i], which is stream (e0 - i) mod M at group offset
 * floor((e0 - i) / M). Taps are grouped by i mod M so that within a class both addresses move by one
 * float per term.
 */
function laneTables(rt: Runtime, d: FilterDesign) {
  const { L, M, prototype: h } = d;
  const N = h.length;
  /** Where input x[M*u + e] lives: stream r, `a` groups from u. */
  const where = (e: number) => {
    const r = ((e % M) + M) % M;
    return { r, a: (e - r) / M };
  };
  interface Tap {
    readonly r: number;
    readonly a: number;
  }
  let hist = 0;
  const branches: { e0: number; classes: { A: Tap[]; B: Tap[]; c: number[] }[] }[] = [];
  for (let p = 0; p < L; p++) {
    const e0 = Math.floor((p * M) / L);
    const mirror = (N - 1 - 2 * p) / L;
    const classes = Array.from({ length: M }, () => ({ A: [] as Tap[], B: [] as Tap[], c: [] as number[] }));
    for (let i = 0; 2 * i <= mirror; i++) {
      const j = mirror - i;
      const A = where(e0 - i);
      const B = where(e0 - j);
      hist = Math.max(hist, 1 - A.a, 1 - B.a);
      const cls = classes[i % M]!;
      cls.A.push(A);
      cls.B.push(B);
      cls.c.push(i === j ? h[p + i * L]! / 2 : h[p + i * L]!);
    }
    branches.push({ e0, classes });
  }
  const streamCap = hist + Math.ceil(BLOCK / M) + 32;
  const offset = (t: Tap) => (t.r * streamCap + t.a) * 4;
  const rec = 4 + 16 * M;
  const info = rt.alloc(L * rec);
  for (let p = 0; p < L; p++) {
    const { e0, classes } = branches[p]!;
    const at = (info + p * rec) >> 2;
    rt.i32[at] = e0;
    for (let k = 0; k < M; k++) {
      const { A, B, c } = classes[k]!;
      const coef = rt.alloc(Math.max(1, c.length) * 4);
      for (let t = 0; t < c.length; t++) {
        rt.f32[(coef >> 2) + t] = c[t]!;
        // Within a class, A steps back one group per term and B forward one: the kernel relies on it.
        if (offset(A[t]!) !== offset(A[0]!) - 4 * t || offset(B[t]!) !== offset(B[0]!) + 4 * t) {
          throw new Error(`resampler lanes table: irregular class ${k} of branch ${p}`);
        }
      }
      const q = at + 1 + 4 * k;
      rt.i32[q] = c.length > 0 ? offset(A[0]!) : 0;
      rt.i32[q + 1] = c.length > 0 ? offset(B[0]!) : 0;
      rt.i32[q + 2] = c.length;
      rt.i32[q + 3] = coef;
    }
  }
  return { info, streamCap, hist };
}

const tables = new WeakMap<FilterDesign, Tables>();

function tablesFor(rt: Runtime, d: FilterDesign): Tables {
  let t = tables.get(d);
  if (t !== undefined) return t;
  const T = d.tapsPerPhase;
  const tp = Math.ceil(T / 16) * 16;
  let coef = 0;
  let nextPhase = 0;
  let advance = 0;
  let g = 0;
  let lane = { info: 0, streamCap: 0, hist: 0 };
  if (useLanes(d)) {
    lane = laneTables(rt, d);
  } else if (d.kind === 'polyphase') {
    coef = rt.alloc(d.L * tp * 4);
    nextPhase = rt.alloc(d.L * 4);
    advance = rt.alloc(d.L * 4);
    for (let p = 0; p < d.L; p++) {
      for (let i = 0; i < T; i++) rt.f32[(coef >> 2) + p * tp + (tp - T) + i] = d.phases[p * T + i]!;
    }
    rt.i32.set(d.nextPhase, nextPhase >> 2);
    rt.i32.set(d.advance, advance >> 2);
  } else {
    g = rt.alloc(d.halfLength * 4);
    for (let j = 0; j < d.halfLength; j++) rt.f32[(g >> 2) + j] = d.halfband[j]!;
  }
  t = { coef, nextPhase, advance, tp, g, ...lane };
  tables.set(d, t);
  return t;
}

class WasmResampler implements Resampler {
  readonly inRate: number;
  readonly outRate: number;
  readonly latencyMs: number;
  private readonly rt: Runtime;
  private readonly d: FilterDesign;
  private readonly t: Tables;
  private readonly kind: number;
  /** Floats per history buffer (half-band down has two: even and odd inputs). */
  private readonly cap: number;
  /** Bytes of filter state from `st`; the instance's own output area follows them. */
  private readonly bytes: number;
  private st: number;
  /** Input samples per kernel call whose output fits the own output area. */
  private readonly ownIn: number;
  /** Where the instance's own output area is in linear memory. */
  private readonly ownPtr: number;
  /** The half-band kernels' arguments, copied from the shared tables: one object fewer to read a chunk. */
  private readonly g: number;
  private readonly m: number;
  /** Views of the own output area by byte length, and the memory generation they belong to. */
  private ownViews = new Map<number, Uint8Array>();
  private ownLast: Uint8Array = new Uint8Array(0);
  private ownGeneration = -1;
  /** Output of a `processBytes` input too long for the own area, gathered here (grown as needed). */
  private long: Uint8Array = new Uint8Array(0);
  private longViews = new Map<number, Uint8Array>();

  constructor(rt: Runtime, d: FilterDesign) {
    this.rt = rt;
    this.d = d;
    this.inRate = d.inRate;
    this.outRate = d.outRate;
    this.latencyMs = d.latencyMs;
    this.t = tablesFor(rt, d);
    this.g = this.t.g;
    this.m = d.halfLength;
    const m = d.halfLength;
    if (d.kind === 'halfband-down') {
      this.kind = 1;
      this.cap = 2 * m + BLOCK / 2 + 4;
      this.bytes = HEADER + 2 * this.cap * 4;
    } else if (d.kind === 'halfband-up') {
      this.kind = 2;
      this.cap = 2 * m + BLOCK;
      this.bytes = HEADER + this.cap * 4;
    } else if (useLanes(d)) {
      this.kind = 3;
      this.cap = this.t.streamCap;
      this.bytes = HEADER + d.M * this.cap * 4;
    } else {
      this.kind = 0;
      this.cap = this.t.tp + BLOCK;
      this.bytes = HEADER + this.cap * 4;
    }
    this.ownIn = Math.min(BLOCK, Math.floor((OWN_OUT * d.M) / d.L) - 1);
    this.st = rt.alloc(this.#blockBytes);
    this.ownPtr = this.st + this.#ownOffset;
    this.reset();
  }

  /** The own output area follows the state, 16-byte aligned, with 16 bytes to spare. */
  get #ownOffset(): number {
    return (this.bytes + 15) & ~15;
  }

  get #blockBytes(): number {
    return this.#ownOffset + 2 * OWN_OUT + 16;
  }

  maxOutput(inputSamples: number): number {
    return Math.ceil((inputSamples * this.d.L) / this.d.M);
  }

  reset(): void {
    const rt = this.rt;
    rt.f32.fill(0, this.st >> 2, (this.st + this.bytes) >> 2);
    const h = this.st >> 2;
    const m = this.d.halfLength;
    // Zero history so output 0 sits at input time 0 (see filters.ts for the timing model).
    if (this.kind === 1) {
      rt.i32[h] = 2 * m;
      rt.i32[h + 1] = 2 * m;
      rt.i32[h + 2] = 2 * m;
    } else if (this.kind === 2) {
      rt.i32[h] = 2 * m - 1;
      rt.i32[h + 2] = 2 * m - 1;
    } else if (this.kind === 3) {
      const hist = this.t.hist;
      rt.i32[h] = hist * this.d.M;
      rt.i32[h + 1] = hist;
      rt.i32[h + 2] = hist;
    } else {
      rt.i32[h] = this.t.tp - 1;
      rt.i32[h + 2] = this.t.tp - 1;
    }
  }

  free(): void {
    if (this.st !== 0) this.rt.release(this.st, this.#blockBytes);
    this.st = 0;
  }

  process(input: Int16Array, output: Int16Array, inLength = input.length, outAt = 0): number {
    const rt = this.runtime();
    const inBase = rt.inPtr >> 1;
    let read = 0;
    let written = 0;
    while (read < inLength) {
      const n = Math.min(BLOCK, inLength - read);
      const heap = rt.i16;
      if (read === 0 && n === input.length) heap.set(input, inBase);
      else for (let i = 0; i < n; i++) heap[inBase + i] = input[read + i]!;
      const got = this.kernel(rt, rt.inPtr, n, rt.outPtr);
      output.set(rt.outView(got), outAt + written);
      written += got;
      read += n;
    }
    return written;
  }

  processBytes(input: Uint8Array): Uint8Array {
    const rt = this.runtime();
    const bytes = input.length;
    if ((bytes & 1) !== 0) throw new RangeError(`PCM16 input must be whole samples, got ${bytes} bytes`);
    const samples = bytes >> 1;
    if (samples <= this.ownIn) {
      // WebAssembly memory is little-endian, as the input is: the bytes go in as they are.
      rt.u8.set(input, rt.inPtr);
      return this.ownView(rt, 2 * this.kernel(rt, rt.inPtr, samples, this.ownPtr));
    }
    // Longer than one kernel call takes: the pieces' output gathered in a buffer of this instance.
    const max = 2 * this.maxOutput(samples);
    if (this.long.length < max) {
      this.long = new Uint8Array(max);
      this.longViews.clear();
    }
    let written = 0;
    for (let start = 0; start < samples; start += IN_SCRATCH) {
      // A stretch of input into the scratch at once: the whole input when it fits (a view otherwise).
      const end = Math.min(samples, start + IN_SCRATCH);
      rt.u8.set(start === 0 && end === samples ? input : input.subarray(2 * start, 2 * end), rt.inPtr);
      for (let read = start; read < end; ) {
        const n = Math.min(this.ownIn, end - read);
        const got = 2 * this.kernel(rt, rt.inPtr + 2 * (read - start), n, this.ownPtr);
        this.long.set(this.ownView(rt, got), written);
        written += got;
        read += n;
      }
    }
    let view = this.longViews.get(written);
    if (view === undefined) {
      if (this.longViews.size >= 64) this.longViews.clear();
      view = this.long.subarray(0, written);
      this.longViews.set(written, view);
    }
    return view;
  }

  /** The first `bytes` of the own output area (a view made once per length and memory generation). */
  private ownView(rt: Runtime, bytes: number): Uint8Array {
    if (this.ownGeneration !== rt.generation) {
      this.ownGeneration = rt.generation;
      this.ownViews.clear();
      this.ownLast = new Uint8Array(0);
    }
    if (this.ownLast.length === bytes && bytes > 0) return this.ownLast;
    let v = this.ownViews.get(bytes);
    if (v === undefined) {
      // A bot sending chunks of every length must not grow this without bound.
      if (this.ownViews.size >= 64) this.ownViews.clear();
      v = rt.u8.subarray(this.ownPtr, this.ownPtr + bytes);
      this.ownViews.set(bytes, v);
    }
    this.ownLast = v;
    return v;
  }

  private runtime(): Runtime {
    // Its linear memory may already belong to another instance: fail loudly, not corrupt it.
    if (this.st === 0) throw new Error('resampler used after free()');
    return this.rt;
  }

  /** Runs the kernel on `n` samples at `src` (at most BLOCK); returns the samples written at `out`. */
  private kernel(rt: Runtime, src: number, n: number, out: number): number {
    // The half-band kernels (8k <-> 16k, the usual case) read only fields of this instance.
    if (this.kind === 1) return rt.halfbandDown(this.st, this.g, this.m, this.cap, src, n, out);
    if (this.kind === 2) return rt.halfbandUp(this.st, this.g, this.m, src, n, out);
    const t = this.t;
    if (this.kind === 3) return rt.lanes(this.st, t.info, this.d.L, this.d.M, this.cap, src, n, out);
    return rt.polyphase(this.st, t.coef, t.nextPhase, t.advance, t.tp, src, n, out);
  }
}

export function createWasmResampler(design: FilterDesign): Resampler {
  const rt = load();
  if (rt === null) {
    throw new Error(`WebAssembly resampler unavailable (run npm run build): ${String(loadError)}`, {
      cause: loadError,
    });
  }
  return new WasmResampler(rt, design);
}
