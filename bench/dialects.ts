/**
 * Load per provider dialect: the built bridge (echo bot, MEDIA_AUTH=none) under N concurrent calls placed
 * by the emulator in each platform's own dialect, beside the default dialect's calls in the same minutes.
 * Per dialect: calls lost or failed, markers lost, the platform's rules broken (the emulated provider
 * records them), inter-arrival p99 of the bridge's chunks at the caller, and the bridge's CPU per
 * call-second, with its ratio to the default dialect's.
 *
 *   npm run build && npm run bench:dialects -- [--dialects default,twilio,...] [--calls 200]
 *     [--seconds 20] [--rounds 2] [--pin [--pin-cpus 1,0]] [--json FILE]
 *
 * The dialects take turns round by round (default, twilio, ..., default, twilio, ...), each on a fresh
 * bridge, so a drifting machine weighs on all alike; a dialect's figure is the median of its rounds.
 * The bot side's dialects have their own: bench/bot-dialects.ts (`npm run bench:bot-dialects`).
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseDialect } from '../src/emulator/dialects/params.js';
import { DIALECTS, type DialectName } from '../src/emulator/dialects/types.js';
import { type RungReport, runRung } from './capacity-lib.js';
import { ROUNDS_OPTIONS, roundsFrom } from './rounds-args.js';

const { values } = parseArgs({
  options: { dialects: { type: 'string', default: DIALECTS.join(',') }, ...ROUNDS_OPTIONS },
});
const dialects: DialectName[] = values.dialects.split(',').map((d) => parseDialect(d, '--dialects'));
if (!dialects.includes('default')) dialects.unshift('default');
const { calls, seconds, rounds, ctx } = await roundsFrom(values);
const pin = ctx.pin;

const runs = new Map<DialectName, RungReport[]>(dialects.map((d) => [d, []]));
for (let round = 1; round <= rounds; round++) {
  for (const dialect of dialects) {
    const r = await runRung('bridge', 'binary', calls, seconds, ctx, { dialect });
    runs.get(dialect)!.push(r);
    const s = r.server;
    process.stderr.write(
      `round ${round} ${dialect.padEnd(11)} ${r.codec.padEnd(4)} ${r.connected}/${r.calls} connected, ` +
        `failed ${r.failed}, dropped ${r.dropped}, markers lost ${r.markers.lost}, breaches ${r.breaches}, ` +
        `back ${r.audioReturnedPct}%, inter-arrival p99 ${r.interArrivalMs.p99} ms, ` +
        `cpu ${s?.cpuMsPerCallSecond ?? '?'} ms/call-s (main ${s?.threads?.main ?? '?'}), ` +
        `rss/call ${r.rssPerCallKb ?? '?'} KB, load avg ${r.loadAvg1 ?? '?'}, pressure ${r.cpuPressure10 ?? '?'}%\n`,
    );
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const cpuOf = (d: DialectName) => median(runs.get(d)!.map((r) => r.server?.cpuMsPerCallSecond ?? Number.NaN));
const base = cpuOf('default');
const rows = dialects.map((d) => {
  const rs = runs.get(d)!;
  const sum = (f: (r: RungReport) => number) => rs.reduce((a, r) => a + f(r), 0);
  return {
    dialect: d,
    codec: rs[0]!.codec,
    lost: sum((r) => r.failed + r.dropped + r.markers.lost),
    breaches: sum((r) => r.breaches),
    backPct: Math.min(...rs.map((r) => r.audioReturnedPct)),
    interArrivalP99Ms: median(rs.flatMap((r) => r.interArrivalMs.p99 ?? [])),
    cpuMsPerCallSecond: cpuOf(d),
    vsDefault: cpuOf(d) / base,
  };
});
const out = [
  `${calls} calls x ${seconds} s per dialect, ${rounds} round(s), ${pin === undefined ? 'unpinned' : `server on cpu ${pin.server}, load on cpu ${pin.load}`}`,
  '| dialect | wire codec | lost | rules broken | audio back (min) | inter-arrival p99 | CPU ms/call-s | vs default |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.dialect} | ${r.codec} | ${r.lost} | ${r.breaches} | ${r.backPct} % | ${r.interArrivalP99Ms.toFixed(1)} ms | ` +
      `${r.cpuMsPerCallSecond.toFixed(2)} | ${r.vsDefault.toFixed(2)}x |`,
  ),
];
process.stdout.write(`${out.join('\n')}\n`);
if (values.json !== undefined)
  await writeFile(
    values.json,
    `${JSON.stringify({ date: new Date().toISOString(), calls, seconds, rounds, pin: pin ?? null, rows, runs: Object.fromEntries(runs) }, null, 2)}\n`,
  );
