/**
 * Prometheus metrics of one bridge instance (a registry per instance, so tests can run several).
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, type Metric, Registry } from 'prom-client';

/**
 * A counter bumped per audio chunk: a plain number here, moved into its prom-client counter when the
 * metrics are read. A prom-client `inc` hashes its labels and validates its argument on every call,
 * which measured ~5 % of the main thread's busy time at a few hundred calls.
 */
export class Tally {
  #n = 0;
  readonly #target: { inc(v: number): void };
  /** The counter the target belongs to: resetting it discards what is pending here. */
  readonly owner: object;

  constructor(owner: object, target: { inc(v: number): void }) {
    this.owner = owner;
    this.#target = target;
  }

  add(v = 1): void {
    this.#n += v;
  }

  flush(): void {
    if (this.#n === 0) return;
    this.#target.inc(this.#n);
    this.#n = 0;
  }

  discard(): void {
    this.#n = 0;
  }
}

/**
 * A histogram observed per audio chunk, without labels: bucket counts in a typed array, rendered in
 * prom-client's histogram format when read (the registry takes any object with `get()`).
 */
export class HotHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly #bounds: readonly number[];
  readonly #counts: Float64Array;
  #sum = 0;

  constructor(name: string, help: string, bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.#bounds = bounds;
    this.#counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const b = this.#bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.#counts[i]!++;
    this.#sum += v;
  }

  reset(): void {
    this.#counts.fill(0);
    this.#sum = 0;
  }

  async get() {
    const values: { value: number; metricName: string; labels: Record<string, string | number> }[] = [];
    let acc = 0;
    for (let i = 0; i <= this.#bounds.length; i++) {
      acc += this.#counts[i]!;
      values.push({
        value: acc,
        metricName: `${this.name}_bucket`,
        labels: { le: this.#bounds[i] ?? '+Inf' },
      });
    }
    values.push({ value: this.#sum, metricName: `${this.name}_sum`, labels: {} });
    values.push({ value: acc, metricName: `${this.name}_count`, labels: {} });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const r = [registry];
  const tallies: Tally[] = [];
  const flush = (): void => {
    for (const t of tallies) t.flush();
  };
  const tally = (owner: Counter<string>, target: { inc(v: number): void }): Tally => {
    const t = new Tally(owner, target);
    tallies.push(t);
    // registry.resetMetrics() resets each counter: what its tallies hold would otherwise come back.
    if (!resetHooked.has(owner)) {
      resetHooked.add(owner);
      const reset = owner.reset.bind(owner);
      owner.reset = () => {
        for (const x of tallies) if (x.owner === owner) x.discard();
        reset();
      };
    }
    return t;
  };
  const resetHooked = new Set<object>();
  const paceLatenessMs = new HotHistogram(
    'voicebridge_pace_lateness_ms',
    'How late outbound chunks left against their real-time schedule',
    [1, 2, 5, 10, 20, 40, 80, 160],
  );
  registry.registerMetric(paceLatenessMs as unknown as Metric);
  const m = {
    registry,
    sessions: new Gauge({ name: 'voicebridge_sessions', help: 'Live media sessions', registers: r }),
    sessionsTotal: new Counter({
      name: 'voicebridge_sessions_total',
      help: 'Media sessions started',
      registers: r,
    }),
    framesIn: new Counter({
      collect: flush,
      name: 'voicebridge_frames_in_total',
      help: 'Audio frames received, by leg (caller, bot)',
      labelNames: ['leg'] as const,
      registers: r,
    }),
    framesOut: new Counter({
      collect: flush,
      name: 'voicebridge_frames_out_total',
      help: 'Audio frames sent, by leg (caller, bot)',
      labelNames: ['leg'] as const,
      registers: r,
    }),
    bytesIn: new Counter({
      collect: flush,
      name: 'voicebridge_bytes_in_total',
      help: 'Audio bytes received, by leg',
      labelNames: ['leg'] as const,
      registers: r,
    }),
    bytesOut: new Counter({
      collect: flush,
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
    badFrameFloods: new Counter({
      name: 'voicebridge_bad_frame_floods_total',
      help: 'Provider sockets closed (1008) for more bad frames within one second than the budget',
      registers: r,
    }),
    shedChunks: new Counter({
      name: 'voicebridge_shed_chunks_total',
      help: 'Outbound chunks dropped, by reason (buffer_full, backpressure, clear)',
      labelNames: ['reason'] as const,
      registers: r,
    }),
    lateChunks: new Counter({
      collect: flush,
      name: 'voicebridge_late_chunks_total',
      help: 'Outbound chunks sent later than one chunk duration behind schedule',
      registers: r,
    }),
    paceLatenessMs,
    dspSeconds: new Counter({
      name: 'voicebridge_dsp_seconds_total',
      help: 'Time spent in the DSP core (decode, resample, encode); inline, estimated from every 8th chunk',
      registers: r,
    }),
    dspGaps: new Counter({
      name: 'voicebridge_dsp_gaps_total',
      help: 'Sessions whose DSP state was lost to a worker failure and rebuilt',
      registers: r,
    }),
    denoisedCalls: new Counter({
      name: 'voicebridge_denoised_calls_total',
      help: "Calls whose caller audio was set to go through the noise suppressor (DENOISE or the tenant's denoise)",
      registers: r,
    }),
    denoiseFailures: new Counter({
      name: 'voicebridge_denoise_failures_total',
      help: 'Calls whose noise suppressor failed or could not start; each went on without it',
      registers: r,
    }),
    botConnects: new Counter({
      name: 'voicebridge_bot_connects_total',
      help: 'Bot leg connections, by outcome (ok, failed)',
      labelNames: ['outcome'] as const,
      registers: r,
    }),
    toolCalls: new Counter({
      name: 'voicebridge_tool_calls_total',
      help: "Calls of a tool by a bot's model, by tool and outcome (ok, error, timeout, invalid_arguments, cancelled)",
      labelNames: ['tool', 'outcome'] as const,
      registers: r,
    }),
    upstreamSeconds: new Histogram({
      name: 'voicebridge_upstream_seconds',
      help: 'Provider API call latency, by call and outcome',
      labelNames: ['call', 'outcome'] as const,
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 20, 30],
      registers: r,
    }),
    eventStreams: new Gauge({
      name: 'voicebridge_event_streams',
      help: 'Open GET /v1/events streams',
      registers: r,
    }),
    eventsDropped: new Counter({
      name: 'voicebridge_events_dropped_total',
      help: 'Live events not sent to a GET /v1/events client that was not reading',
      registers: r,
    }),
    listeners: new Gauge({
      name: 'voicebridge_listeners',
      help: 'Open listen-in sockets (GET /v1/sessions/{id}/listen)',
      registers: r,
    }),
    listenDroppedBytes: new Counter({
      name: 'voicebridge_listen_dropped_bytes_total',
      help: 'Listen-in audio bytes dropped because the listener had fallen behind',
      registers: r,
    }),
  };
  return {
    ...m,
    /** Per-chunk counters (see Tally); sessions share these, one per label set. */
    hot: {
      framesInCaller: tally(m.framesIn, m.framesIn.labels('caller')),
      bytesInCaller: tally(m.bytesIn, m.bytesIn.labels('caller')),
      framesInBot: tally(m.framesIn, m.framesIn.labels('bot')),
      bytesInBot: tally(m.bytesIn, m.bytesIn.labels('bot')),
      framesOutCaller: tally(m.framesOut, m.framesOut.labels('caller')),
      bytesOutCaller: tally(m.bytesOut, m.bytesOut.labels('caller')),
      framesOutBot: tally(m.framesOut, m.framesOut.labels('bot')),
      bytesOutBot: tally(m.bytesOut, m.bytesOut.labels('bot')),
      lateChunks: tally(m.lateChunks, m.lateChunks),
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
