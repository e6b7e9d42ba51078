/**
 * The most times (arrivals, admissions) in any window of `windowMs`, over every window start at or after
 * `from` (all by default). The worst window starts at one of the times, so only those are tried.
 * Half-open windows [t, t + windowMs): a time exactly one window later is in the next window, as the
 * provider's sliding check counts it.
 */
export function maxInWindow(
  times: readonly number[],
  windowMs: number,
  from = Number.NEGATIVE_INFINITY,
): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    if (sorted[i]! < from) continue;
    j = Math.max(j, i);
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs) j++;
    best = Math.max(best, j - i);
  }
  return best;
}
