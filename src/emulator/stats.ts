/**
 * Small summaries of timing samples for call reports and tests.
 */

export interface Percentiles {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** The q-quantile (0..1) of `values` by nearest rank; NaN when there are none. */
export function quantile(values: readonly number[], q: number): number {
  return nearestRank(
    [...values].sort((a, b) => a - b),
    q,
  );
}

/** Nearest-rank percentiles of `values` (milliseconds, rounded to 0.01). */
export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) return { count: 0, p50: 0, p99: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => Math.round(nearestRank(sorted, q) * 100) / 100;
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: at(1) };
}

function nearestRank(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
