/**
 * Health metrics of the shared state store, registered on the instance's registry (so the memory store,
 * which cannot fail, adds none).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export function createStoreMetrics(registry: Registry) {
  const r = [registry];
  return {
    up: new Gauge({
      name: 'voicebridge_store_up',
      help: 'Whether the shared state store answers (1) or not (0)',
      registers: r,
    }),
    errors: new Counter({
      name: 'voicebridge_store_errors_total',
      help: 'State store operations that failed, by operation',
      labelNames: ['op'] as const,
      registers: r,
    }),
    reconnects: new Counter({
      name: 'voicebridge_store_reconnects_total',
      help: 'Reconnection attempts to the state store',
      registers: r,
    }),
    opSeconds: new Histogram({
      name: 'voicebridge_store_op_seconds',
      help: 'State store operation latency, by operation',
      labelNames: ['op'] as const,
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2],
      registers: r,
    }),
    conflicts: new Counter({
      name: 'voicebridge_store_conflicts_total',
      help: 'Sessions whose id another instance already holds live in the store',
      registers: r,
    }),
  };
}

export type StoreMetrics = ReturnType<typeof createStoreMetrics>;
