/**
 * Small summaries of timing samples for call reports.
 */

export interface Percentiles {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Nearest-rank percentiles of `values` (milliseconds, rounded to 0.01). */
export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) return { count: 0, p50: 0, p99: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number => {
    const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
    return Math.round(sorted[i]! * 100) / 100;
  };
  return { count: sorted.length, p50: at(50), p99: at(99), max: at(100) };
}
