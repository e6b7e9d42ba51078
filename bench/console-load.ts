/**
 * The console's cost under load: the built bridge (echo bot) under N calls, once plain and once
 * "observed": every call recorded (RECORD_CALLS=true), L listen-in sockets on live calls (mixed leg) and
 * one live event stream (GET /v1/events, levels included) open through the load. The two take turns
 * round by round on fresh bridges, pinned like bench:capacity with --pin.
 *
 *   npm run build && npm run bench:console-load -- [--calls 200] [--seconds 20] [--listeners 5]
 *     [--rounds 2] [--pin [--pin-cpus 1,0]] [--json FILE]
 *
 * Per run: calls lost or failed, markers lost, the bridge's CPU per call-second (and the observed
 * run's ratio to the plain one's), what the listeners and the event stream received, and the recordings'
 * files: how many, bytes on disk, and bytes per call-second.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { mintToken } from '../src/auth/jwt.js';
import { type RungReport, runRung } from './capacity-lib.js';
import { ROUNDS_OPTIONS, roundsFrom, whole } from './rounds-args.js';

const { values } = parseArgs({
  options: { listeners: { type: 'string', default: '5' }, ...ROUNDS_OPTIONS },
});
const { calls, seconds, rounds, ctx } = await roundsFrom(values);
const listeners = whole('listeners', values.listeners, 0, 100);
const pin = ctx.pin;

const SECRET = 'bench-console-load-rest-secret-0123456789';

interface Watched {
  listenersOpened: number;
  listenBytes: number;
  listenClosed1000: number;
  events: Record<string, number>;
}

/** Listen-in on `listeners` live calls and one event stream, until the returned function is called. */
async function watch(http: string, into: Watched): Promise<() => Promise<void>> {
  const token = await mintToken({ secret: SECRET, scopes: ['sessions:read', 'sessions:listen'] });
  const res = await fetch(`${http}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
  const live = (await res.json()) as { session_id: string }[];
  const sockets: WebSocket[] = [];
  for (const s of live.slice(0, listeners)) {
    const ws = new WebSocket(
      `${http.replace('http', 'ws')}/v1/sessions/${encodeURIComponent(s.session_id)}/listen?leg=mixed`,
      { headers: { authorization: `Bearer ${token}` } },
    );
    ws.on('open', () => into.listenersOpened++);
    ws.on('message', (data, isBinary) => {
      if (isBinary) into.listenBytes += (data as Buffer).length;
    });
    ws.on('close', (code) => {
      if (code === 1000) into.listenClosed1000++;
    });
    ws.on('error', () => {});
    sockets.push(ws);
  }
  const abort = new AbortController();
  const stream = fetch(`${http}/v1/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  }).then(async (r) => {
    const decoder = new TextDecoder();
    let text = '';
    for await (const piece of r.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(piece, { stream: true });
      let at = text.indexOf('\n\n');
      while (at >= 0) {
        const type = /^event: (.+)$/m.exec(text.slice(0, at))?.[1];
        if (type !== undefined) into.events[type] = (into.events[type] ?? 0) + 1;
        text = text.slice(at + 2);
        at = text.indexOf('\n\n');
      }
    }
  });
  stream.catch(() => {}); // ended by the abort below
  return async () => {
    abort.abort();
    for (const ws of sockets) ws.terminate();
  };
}

function filesUnder(dir: string): { wav: number; bytes: number } {
  let wav = 0;
  let bytes = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    bytes += statSync(join(e.parentPath, e.name)).size;
    if (e.name.endsWith('.wav')) wav++;
  }
  return { wav, bytes };
}

type Run = RungReport & { mode: string; watched?: Watched; recordings?: { wav: number; bytes: number } };
const runs: Run[] = [];
const line = (r: Run) => {
  const s = r.server;
  const w = r.watched;
  const rec = r.recordings;
  return (
    `${r.mode.padEnd(8)} ${r.connected}/${r.calls} connected, failed ${r.failed}, dropped ${r.dropped}, ` +
    `markers lost ${r.markers.lost}, back ${r.audioReturnedPct}%, rtt p99 ${r.roundTripMs.p99} ms, ` +
    `cpu ${s?.cpuMsPerCallSecond ?? '?'} ms/call-s, rss/call ${r.rssPerCallKb ?? '?'} KB` +
    (w === undefined
      ? ''
      : `, listeners ${w.listenersOpened} (${(w.listenBytes / 2 ** 20).toFixed(1)} MB heard, ${w.listenClosed1000} closed 1000), events ${JSON.stringify(w.events)}`) +
    (rec === undefined ? '' : `, recordings ${rec.wav} files ${(rec.bytes / 2 ** 20).toFixed(1)} MB`)
  );
};

for (let round = 1; round <= rounds; round++) {
  for (const mode of ['plain', 'observed'] as const) {
    if (mode === 'plain') {
      const r: Run = {
        ...(await runRung('bridge', 'binary', calls, seconds, ctx, { env: { AUTH_JWT_SECRET: SECRET } })),
        mode,
      };
      runs.push(r);
      process.stderr.write(`round ${round} ${line(r)}\n`);
      continue;
    }
    const dir = mkdtempSync(join(tmpdir(), 'voicebridge-rec-'));
    const watched: Watched = { listenersOpened: 0, listenBytes: 0, listenClosed1000: 0, events: {} };
    try {
      const r: Run = {
        ...(await runRung('bridge', 'binary', calls, seconds, ctx, {
          env: { AUTH_JWT_SECRET: SECRET, RECORD_CALLS: 'true', RECORDINGS_DIR: dir },
          during: (http) => watch(http, watched),
        })),
        mode,
        watched,
        recordings: filesUnder(dir),
      };
      runs.push(r);
      process.stderr.write(`round ${round} ${line(r)}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const cpu = (mode: string) =>
  median(runs.filter((r) => r.mode === mode).map((r) => r.server?.cpuMsPerCallSecond ?? Number.NaN));
const observed = runs.filter((r) => r.mode === 'observed');
const lost = runs.reduce((a, r) => a + r.failed + r.dropped + r.markers.lost, 0);
const recBytes = median(observed.map((r) => r.recordings?.bytes ?? 0));
const summary = [
  `${calls} calls x ${seconds} s, ${rounds} round(s), ${listeners} listeners, ${pin === undefined ? 'unpinned' : `server on cpu ${pin.server}, load on cpu ${pin.load}`}`,
  `lost (failed + dropped + markers) over every run: ${lost}`,
  `CPU ms per call-second: plain ${cpu('plain').toFixed(3)}, observed ${cpu('observed').toFixed(3)} = ${(cpu('observed') / cpu('plain')).toFixed(2)}x`,
  `recordings: ${observed.map((r) => r.recordings?.wav ?? 0).join(', ')} files; ${(recBytes / 2 ** 20).toFixed(1)} MB a run; ` +
    `${(recBytes / 1024 / (calls * seconds)).toFixed(1)} KB per call-second of load (the ramp and drain included)`,
];
process.stdout.write(`${summary.join('\n')}\n`);
if (values.json !== undefined)
  await writeFile(
    values.json,
    `${JSON.stringify({ date: new Date().toISOString(), calls, seconds, listeners, rounds, pin: pin ?? null, summary, runs }, null, 2)}\n`,
  );
