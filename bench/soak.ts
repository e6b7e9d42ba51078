/**
 * Soak: N concurrent calls for a long time through the built bridge (`node dist/cli/main.js`, its own
 * process, echo bot), driven by the load generator's processes (src/load). Samples the bridge's
 * /metrics (RSS, heap, active handles, active resources and timers, live sessions) every few seconds and
 * reports: RSS growth from the end of warm-up to the end of the load (goal <= 5 %), handles, timers and
 * sessions after every call ended against the idle baseline before the first (goal: no growth), and
 * lost chunks (timing markers that never came back, calls dropped, error events; goal: zero).
 *
 *   npm run bench:soak -- [--calls 200] [--seconds 600] [--warmup 60] [--waves 1] [--procs 1] [--json FILE]
 *
 * Not a CI test: it takes as long as it is told to, and its figures depend on the machine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { generateTone } from '../src/audio/tone.js';
import { mintToken } from '../src/auth/jwt.js';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';
import { DEV_MEDIA_SECRET } from '../src/config.js';
import { asBackground } from '../src/load/markers.js';
import { orchestrate } from '../src/load/orchestrator.js';
import { buildReport } from '../src/load/report.js';
import type { RunOptions } from '../src/load/runner.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '600' },
    warmup: { type: 'string', default: '60' },
    procs: { type: 'string', default: '1' },
    'sample-every': { type: 'string', default: '5' },
    // Runs of the same load one after another on the same bridge: a leak grows RSS wave after wave,
    // a plateau does not. The figures are of the last wave; RSS after each wave is listed.
    waves: { type: 'string', default: '1' },
    json: { type: 'string' },
  },
});
const calls = Number(values.calls);
const seconds = Number(values.seconds);
const warmupS = Number(values.warmup);
const procs = Number(values.procs);
const sampleEveryMs = Number(values['sample-every']) * 1000;
const waves = Number(values.waves);
for (const [name, v] of Object.entries({ calls, seconds, warmup: warmupS, procs, waves })) {
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name} must be a whole number, got ${String(v)}`);
}
if (warmupS >= seconds) throw new Error('--warmup must be shorter than --seconds');

interface Sample {
  /** Seconds since the load started (negative: before). */
  t: number;
  rssMb: number;
  heapUsedMb: number;
  /** Buffers and other memory outside the JS heap (audio queues live here). */
  externalMb: number;
  handles: number;
  resources: number;
  timers: number;
  sessions: number;
}

function metric(text: string, name: string, label?: string): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    if (label !== undefined && !rest.includes(label)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    found = true;
  }
  return found ? sum : Number.NaN;
}

async function sample(http: string, t: number): Promise<Sample | undefined> {
  try {
    const text = await (await fetch(`${http}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    return {
      t: Math.round(t),
      rssMb: metric(text, 'process_resident_memory_bytes') / 2 ** 20,
      heapUsedMb: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
      externalMb: metric(text, 'nodejs_external_memory_bytes') / 2 ** 20,
      handles: metric(text, 'nodejs_active_handles_total'),
      resources: metric(text, 'nodejs_active_resources_total'),
      // process.getActiveResourcesInfo() lists each timer that keeps the loop alive as "Timeout" (the
      // label is absent when there is none; unref()-ed timers are not listed at all).
      timers: zeroIfAbsent(metric(text, 'nodejs_active_resources', 'type="Timeout"')),
      sessions: metric(text, 'voicebridge_sessions'),
    };
  } catch {
    return undefined;
  }
}

async function startBridge(): Promise<{ child: ChildProcess; http: string; media: string }> {
  const child = spawn(process.execPath, [...BRIDGE_NODE_FLAGS, 'dist/cli/main.js'], {
    env: {
      ...process.env,
      NODE_ENV: 'development',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      BOT_URL: 'builtin:echo',
      MEDIA_SECRET: DEV_MEDIA_SECRET,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
    // Its own process group: a Ctrl-C or group signal meant for another job on a shared machine
    // must not end the soak's bridge.
    detached: true,
  });
  child.unref();
  // Say why the bridge ended, if it ends early (its "shutting down" line names the signal).
  child.stdout!.on('data', (d: Buffer) => {
    if (d.includes('shutting down')) process.stderr.write(`bridge: ${d.toString()}`);
  });
  let out = '';
  const http = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`bridge did not start (npm run build?)\n${out}`)),
      20_000,
    );
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.length > 100_000) out = out.slice(-50_000);
      const m = /voicebridge listening on (http:\/\/[0-9.]+:\d+)/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`bridge exited with ${code}\n${out}`)));
  });
  return { child, http, media: `${http.replace('http', 'ws')}/v1/media` };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const bridge = await startBridge();
  const samples: Sample[] = [];
  let t0 = performance.now();
  let stopSampling = false;
  const sampler = (async () => {
    // Bounded by the run: stops when told, at most one sample per interval.
    while (!stopSampling) {
      const s = await sample(bridge.http, (performance.now() - t0) / 1000);
      if (s !== undefined) samples.push(s);
      await sleep(sampleEveryMs);
    }
  })();
  try {
    await sleep(3_000);
    const idle = await sample(bridge.http, -1);
    const rampSeconds = Math.max(1, Math.ceil(calls / 100));
    const options: RunOptions = {
      url: bridge.media,
      calls,
      seconds,
      rampSeconds,
      rate: 8000,
      codec: 'slin',
      encoding: 'binary',
      token: await mintToken({ secret: DEV_MEDIA_SECRET, ttlSeconds: seconds + 3600 }),
      background: asBackground(generateTone(440, 8000, 8000)),
      chunkMs: 20,
      markerEveryMs: 1000,
      markerBurstMs: 60,
      drainMs: 2_000,
      markerTimeoutMs: 5_000,
      idPrefix: `soak-${process.pid}`,
    };
    let lastLine = 0;
    // A bridge that dies mid-run ends the soak at once: its figures would mean nothing.
    const died = new Promise<never>((_, reject) =>
      bridge.child.once('exit', (code, signal) =>
        reject(new Error(`the bridge exited during the soak (code ${code}, signal ${signal})`)),
      ),
    );
    died.catch(() => {});
    const afterWaves: {
      wave: number;
      rssMb: number | null;
      heapUsedMb: number | null;
      externalMb: number | null;
    }[] = [];
    let firstSample = 0;
    let result: Awaited<ReturnType<typeof orchestrate>> | undefined;
    for (let wave = 1; wave <= Math.max(1, waves); wave++) {
      firstSample = samples.length;
      t0 = performance.now();
      lastLine = 0;
      result = await Promise.race([
        died,
        orchestrate({ ...options, idPrefix: `${options.idPrefix}-w${wave}` }, procs, (p) => {
          if (p.elapsedS - lastLine < 30) return;
          lastLine = p.elapsedS;
          const s = samples.at(-1);
          process.stderr.write(
            `${Math.round(p.elapsedS)} s: ${p.connected} connected, ${p.failed} failed, markers ${p.markersReturned} back / ${p.markersLost} lost; ` +
              `RSS ${s?.rssMb.toFixed(1)} MB, heap ${s?.heapUsedMb.toFixed(1)} MB, sessions ${s?.sessions}\n`,
          );
        }),
      ]);
      // After every call ended: let the bridge settle, then compare with the idle baseline.
      await sleep(5_000);
      const settled = await sample(bridge.http, (performance.now() - t0) / 1000);
      afterWaves.push({
        wave,
        rssMb: round(settled?.rssMb),
        heapUsedMb: round(settled?.heapUsedMb),
        externalMb: round(settled?.externalMb),
      });
      if (waves > 1) process.stderr.write(`after wave ${wave}: ${JSON.stringify(afterWaves.at(-1))}\n`);
    }
    if (result === undefined) throw new Error('no wave ran');
    const loadEnd = rampSeconds + seconds;
    // Sampled alone: a fetch overlapping the sampler's would open a second connection, one more handle.
    stopSampling = true;
    await sampler;
    const after = await sample(bridge.http, (performance.now() - t0) / 1000);

    const during = samples.slice(firstSample).filter((s) => s.t >= rampSeconds + warmupS && s.t <= loadEnd);
    const warm = during[0];
    const end = during.at(-1);
    const peak = Math.max(...during.map((s) => s.rssMb));
    const report = buildReport('bridge', options, result);
    const r = result.result;
    const lost = r.markersLost + r.callsDropped + r.callsFailed;
    const summary = {
      calls,
      seconds,
      warmupSeconds: warmupS,
      rss: {
        idleMb: round(idle?.rssMb),
        afterWarmupMb: round(warm?.rssMb),
        endOfLoadMb: round(end?.rssMb),
        peakMb: round(peak),
        growthAfterWarmupPct: warm && end ? round(((end.rssMb - warm.rssMb) / warm.rssMb) * 100) : null,
        afterCallsMb: round(after?.rssMb),
      },
      heapUsedMb: {
        afterWarmup: round(warm?.heapUsedMb),
        endOfLoad: round(end?.heapUsedMb),
        afterCalls: round(after?.heapUsedMb),
      },
      externalMb: {
        afterWarmup: round(warm?.externalMb),
        endOfLoad: round(end?.externalMb),
        afterCalls: round(after?.externalMb),
      },
      afterWaves,
      idle: idle && {
        handles: idle.handles,
        resources: idle.resources,
        timers: idle.timers,
        sessions: idle.sessions,
      },
      afterCalls: after && {
        handles: after.handles,
        resources: after.resources,
        timers: after.timers,
        sessions: after.sessions,
      },
      lost: {
        markersSent: r.markersSent,
        markersLost: r.markersLost,
        callsFailed: r.callsFailed,
        callsDropped: r.callsDropped,
        errorEvents: r.errorEvents,
        audioReturnedPct: report.audioReturnedPct,
      },
      roundTripMs: report.roundTripMs,
      interArrivalMs: report.interArrivalMs,
      server: report.server,
      samples,
    };
    const goals = {
      rssGrowthAtMost5Pct: summary.rss.growthAfterWarmupPct !== null && summary.rss.growthAfterWarmupPct <= 5,
      noHandleTimerSessionGrowth:
        idle !== undefined &&
        after !== undefined &&
        after.handles <= idle.handles &&
        after.timers <= idle.timers &&
        after.sessions === 0,
      zeroLostChunks: lost === 0 && r.errorEvents === 0,
    };
    const { samples: _s, ...brief } = summary;
    process.stdout.write(`${JSON.stringify({ ...brief, goals }, null, 2)}\n`);
    if (values.json !== undefined)
      await writeFile(values.json, `${JSON.stringify({ ...summary, goals }, null, 2)}\n`);
    process.exitCode = Object.values(goals).every(Boolean) ? 0 : 1;
  } finally {
    stopSampling = true;
    bridge.child.kill('SIGTERM');
    await sampler;
  }
}

function zeroIfAbsent(v: number): number {
  return Number.isNaN(v) ? 0 : v;
}

function round(v: number | undefined): number | null {
  return v === undefined || !Number.isFinite(v) ? null : Math.round(v * 100) / 100;
}

await main();
