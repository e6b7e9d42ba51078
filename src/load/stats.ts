/**
 * Small statistics for load reports: a fixed-bucket histogram that merges across processes.
 */

export interface Percentiles {
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
  readonly n: number;
}

/** Milliseconds in 0.1 ms buckets up to `maxMs`; larger values land in the last bucket. */
export class Histogram {
  static readonly RESOLUTION_MS = 0.1;
  readonly counts: Uint32Array;
  n = 0;
  max = 0;

  constructor(maxMs = 10_000, counts?: Uint32Array) {
    this.counts = counts ?? new Uint32Array(Math.ceil(maxMs / Histogram.RESOLUTION_MS) + 1);
    if (counts !== undefined) for (let i = 0; i < counts.length; i++) this.n += counts[i]!;
  }

  add(ms: number): void {
    const i = Math.min(this.counts.length - 1, Math.max(0, Math.round(ms / Histogram.RESOLUTION_MS)));
    this.counts[i]!++;
    this.n++;
    if (ms > this.max) this.max = ms;
  }

  merge(other: { counts: Uint32Array; max: number }): void {
    const len = Math.min(this.counts.length, other.counts.length);
    for (let i = 0; i < len; i++) {
      const c = other.counts[i]!;
      this.counts[i]! += c;
      this.n += c;
    }
    if (other.max > this.max) this.max = other.max;
  }

  /** The q-quantile (0..1) by nearest rank; NaN when empty. */
  quantile(q: number): number {
    if (this.n === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil(q * this.n));
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return i * Histogram.RESOLUTION_MS;
    }
    return this.max;
  }

  percentiles(): Percentiles {
    return {
      p50: this.quantile(0.5),
      p95: this.quantile(0.95),
      p99: this.quantile(0.99),
      max: this.n === 0 ? Number.NaN : this.max,
      n: this.n,
    };
  }
}

/** Rounds to `digits` decimals for reports. */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
