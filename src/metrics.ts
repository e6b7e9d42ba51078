/**
 * Prometheus metrics of one bridge instance (a registry per instance, so tests can run several).
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const r = [registry];
  return {
    registry,
    sessions: new Gauge({ name: 'voicebridge_sessions', help: 'Live media sessions', registers: r }),
    sessionsTotal: new Counter({
      name: 'voicebridge_sessions_total',
      help: 'Media sessions started',
      registers: r,
    }),
    framesIn: new Counter({
      name: 'voicebridge_frames_in_total',
      help: 'Audio frames received, by leg (caller, bot)',
      labelNames: ['leg'] as const,
      registers: r,
    }),
    framesOut: new Counter({
      name: 'voicebridge_frames_out_total',
      help: 'Audio frames sent, by leg (caller, bot)',
      labelNames: ['leg'] as const,
      registers: r,
    }),
    bytesIn: new Counter({
      name: 'voicebridge_bytes_in_total',
      help: 'Audio bytes received, by leg',
      labelNames: ['leg'] as const,
      registers: r,
    }),
    bytesOut: new Counter({
      name: 'voicebridge_bytes_out_total',
      help: 'Audio bytes sent, by leg',
      labelNames: ['leg'] as const,
      registers: r,
    }),
    badFrames: new Counter({
      name: 'voicebridge_bad_frames_total',
      help: 'Media frames skipped as bad input, by error code',
      labelNames: ['code'] as const,
      registers: r,
    }),
    shedChunks: new Counter({
      name: 'voicebridge_shed_chunks_total',
      help: 'Outbound chunks dropped, by reason (buffer_full, backpressure, clear)',
      labelNames: ['reason'] as const,
      registers: r,
    }),
    lateChunks: new Counter({
      name: 'voicebridge_late_chunks_total',
      help: 'Outbound chunks sent later than one chunk duration behind schedule',
      registers: r,
    }),
    paceLatenessMs: new Histogram({
      name: 'voicebridge_pace_lateness_ms',
      help: 'How late outbound chunks left against their real-time schedule',
      buckets: [1, 2, 5, 10, 20, 40, 80, 160],
      registers: r,
    }),
    dspSeconds: new Counter({
      name: 'voicebridge_dsp_seconds_total',
      help: 'CPU time spent in the DSP core (decode, resample, encode)',
      registers: r,
    }),
    dspGaps: new Counter({
      name: 'voicebridge_dsp_gaps_total',
      help: 'Sessions whose DSP state was lost to a worker failure and rebuilt',
      registers: r,
    }),
    botConnects: new Counter({
      name: 'voicebridge_bot_connects_total',
      help: 'Bot leg connections, by outcome (ok, failed)',
      labelNames: ['outcome'] as const,
      registers: r,
    }),
    upstreamSeconds: new Histogram({
      name: 'voicebridge_upstream_seconds',
      help: 'Provider API call latency, by call and outcome',
      labelNames: ['call', 'outcome'] as const,
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 20, 30],
      registers: r,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
