/**
 * The load report: one JSON object per target, and a human summary.
 */
import { ROOT_DIALECT } from '../dialects/index.js';
import type { OrchestratedResult, ProgressLine } from './orchestrator.js';
import type { RunOptions } from './runner.js';
import { round } from './stats.js';

export interface LoadReport {
  target: string;
  url: string;
  dialect: string;
  calls: number;
  seconds: number;
  rampSeconds: number;
  rate: number;
  codec: string;
  encoding: string;
  processes: number;
  connected: number;
  failed: number;
  dropped: number;
  failures: Record<string, number>;
  errorEvents: number;
  /** Platform rules the bridge broke (dialect runs). */
  breaches: number;
  /** Caller chunks not sent because the socket was backed up (the target stopped reading). */
  chunksShed: number;
  /** Percentiles are null when nothing was measured (no marker came back). */
  roundTripMs: { p50: Ms; p95: Ms; p99: Ms; max: Ms; n: number };
  markers: { sent: number; returned: number; lost: number; unmatched: number };
  audioReturnedPct: number;
  /** Caller audio sent and the bot's audio received over every call, in samples at `rate`. */
  samples: { sent: number; received: number };
  /** Null when fewer than two chunks came back. */
  interArrivalMs: { p50: Ms; p99: Ms; max: Ms };
  /** p99 of how far chunk inter-arrival strays from the chunk duration (null as above). */
  jitterP99Ms: Ms;
  generator: { cpuPctOfCore: number; cpuMsPerCallSecond: number };
  server: {
    cpuPctOfCore: number;
    cpuMsPerCallSecond: number;
    rssMb: number;
    rssPeakMb: number;
    /** CPU ms per call-second by thread, when the server's pid was watched (same window). */
    threads?: ThreadsReport;
  } | null;
}

export interface ThreadsReport {
  /** The main thread's own (tid == pid). */
  main: number;
  /** Worker threads' (the bridge's DSP workers). */
  workers: number;
  /** Every other thread's (V8 platform threads with the GC's parallel work, libuv's pool). */
  other: number;
  counts: { main: number; worker: number; other: number };
}

/** A measured figure in ms, or null where there was nothing to measure. */
export type Ms = number | null;

const nz = (v: number): Ms => (Number.isFinite(v) ? round(v) : null);

export function buildReport(target: string, o: RunOptions, r: OrchestratedResult): LoadReport {
  const res = r.result;
  const rtt = r.rtt.percentiles();
  const gaps = r.interArrival;
  const p1 = gaps.quantile(0.01);
  const p99 = gaps.quantile(0.99);
  const callSeconds = Math.max(1, res.callsConnected * o.seconds);
  /** Connected calls: a share of a core times 1000 over this is ms per call-second. */
  const perCall = callSeconds / o.seconds;
  return {
    target,
    url: o.url,
    dialect: o.dialect ?? ROOT_DIALECT,
    calls: o.calls,
    seconds: o.seconds,
    rampSeconds: o.rampSeconds,
    rate: o.rate,
    codec: o.codec,
    encoding: o.encoding,
    processes: r.processes,
    connected: res.callsConnected,
    failed: res.callsFailed,
    dropped: res.callsDropped,
    failures: res.failures,
    errorEvents: res.errorEvents,
    breaches: res.breaches,
    chunksShed: res.chunksShed,
    roundTripMs: { p50: nz(rtt.p50), p95: nz(rtt.p95), p99: nz(rtt.p99), max: nz(rtt.max), n: rtt.n },
    markers: {
      sent: res.markersSent,
      returned: res.markersReturned,
      lost: res.markersLost,
      unmatched: res.markersUnmatched,
    },
    audioReturnedPct: res.samplesSent === 0 ? 0 : round((100 * res.samplesReceived) / res.samplesSent, 1),
    samples: { sent: res.samplesSent, received: res.samplesReceived },
    interArrivalMs: { p50: nz(gaps.quantile(0.5)), p99: nz(p99), max: nz(gaps.max) },
    jitterP99Ms: nz(Math.max(p99 - o.chunkMs, o.chunkMs - p1)),
    generator: {
      cpuPctOfCore: round((100 * res.cpuMs) / res.wallMs / r.processes, 1),
      cpuMsPerCallSecond: round(res.cpuMs / Math.max(1, res.callsConnected * (res.wallMs / 1000)), 3),
    },
    server:
      r.server === undefined
        ? null
        : {
            cpuPctOfCore: round(100 * r.server.cpuShare, 1),
            cpuMsPerCallSecond: round((1000 * r.server.cpuShare * o.seconds) / callSeconds, 3),
            rssMb: round(r.server.rssBytes / 2 ** 20, 1),
            rssPeakMb: round(r.server.rssPeakBytes / 2 ** 20, 1),
            ...(r.threads && {
              threads: {
                main: round((1000 * r.threads.main) / perCall, 3),
                workers: round((1000 * r.threads.workers) / perCall, 3),
                other: round((1000 * r.threads.other) / perCall, 3),
                counts: r.threads.counts,
              },
            }),
          },
  };
}

export function progressText(target: string, p: ProgressLine, calls: number): string {
  const rtt = p.recentRtt.percentiles();
  const srv =
    p.server === undefined
      ? 'no /metrics'
      : `cpu ${p.serverCpuShare === undefined ? '?' : Math.round(100 * p.serverCpuShare)}% rss ${Math.round(p.server.rssBytes / 2 ** 20)} MB`;
  const rttText = rtt.n === 0 ? 'rtt -' : `rtt p50 ${rtt.p50.toFixed(1)} p99 ${rtt.p99.toFixed(1)} ms`;
  return (
    `[${target}] ${p.elapsedS.toFixed(0)}s calls ${p.connected}/${calls} (${p.failed} failed)  ${rttText}  ` +
    `markers ${p.markersReturned} back ${p.markersLost} lost  server ${srv}`
  );
}

export function summaryText(r: LoadReport): string {
  const lines = [
    `${r.target}: ${r.calls} ${r.dialect} calls x ${r.seconds}s (${r.rate} Hz ${r.codec} ${r.encoding}, ramp ${r.rampSeconds}s, ${r.processes} load process(es)) -> ${r.url}`,
    `  calls       ${r.connected} connected, ${r.failed} failed, ${r.dropped} dropped${Object.keys(r.failures).length > 0 ? ` ${JSON.stringify(r.failures)}` : ''}; ${r.breaches} breaches, ${r.errorEvents} errors`,
    `  round trip  p50 ${r.roundTripMs.p50} p95 ${r.roundTripMs.p95} p99 ${r.roundTripMs.p99} max ${r.roundTripMs.max} ms (${r.roundTripMs.n} markers)`,
    `  markers     ${r.markers.sent} sent, ${r.markers.returned} back, ${r.markers.lost} lost, ${r.markers.unmatched} unmatched`,
    `  audio back  ${r.audioReturnedPct}%   inter-arrival p50 ${r.interArrivalMs.p50} p99 ${r.interArrivalMs.p99} ms, jitter p99 ${r.jitterP99Ms} ms`,
    `  generator   ${r.generator.cpuPctOfCore}% of a core per process, ${r.generator.cpuMsPerCallSecond} CPU ms per call-second${r.chunksShed > 0 ? `; ${r.chunksShed} chunks shed (the target stopped reading)` : ''}`,
    r.server === null
      ? '  server      no /metrics'
      : `  server      ${r.server.cpuPctOfCore}% of a core, ${r.server.cpuMsPerCallSecond} CPU ms per call-second, RSS ${r.server.rssMb} MB (peak ${r.server.rssPeakMb} MB)`,
  ];
  return lines.join('\n');
}
