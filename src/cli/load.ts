#!/usr/bin/env node
/**
 * `npm run load -- --url ws://127.0.0.1:8080/v1/media --calls N --seconds S [options]`
 * N concurrent synthetic calls paced at real time; reports round-trip latency through the bot, lost
 * markers, audio returned, chunk jitter, and the CPU of the generator and of the target.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { type Codec, parseCodec, parseEncoding, parseTelephonyRate } from '../audio/format.js';
import { mintToken } from '../auth/jwt.js';
import { DEV_MEDIA_SECRET } from '../config.js';
import { parseAudioSpec, renderAudio } from '../emulator/audio-source.js';
import type { DialectName, LegAuth } from '../emulator/dialects/index.js';
import {
  DIALECT_CHOICES,
  dialectChunkMs,
  dialectWireCodec,
  isRootDialect,
  isTcpDialect,
  parseDialect,
  parseDialectCodec,
  parseDialectRate,
  parseHeader,
  ROOT_DIALECT_NAME,
  TCP_DIALECT_NAMES,
} from '../emulator/dialects/params.js';
import { asBackground } from '../load/markers.js';
import { forkChild, orchestrate } from '../load/orchestrator.js';
import { buildReport, type LoadReport, progressText, summaryText } from '../load/report.js';
import type { RunOptions } from '../load/runner.js';

const USAGE = `usage: npm run load -- --url ws://127.0.0.1:8080/v1/media --calls N --seconds S
  [--dialect ${DIALECT_CHOICES}]
  [--auth-token T] [--user U --password P] [--header name:value]   (the platform's credentials)
  [--ramp R] [--rate 8000|16000] [--encoding binary|base64] [--codec slin|pcmu|pcma]
  [--token T | --secret S] [--tenant T] [--audio tone:<hz>|wav:<path>|speech:<text>|silence]
  [--procs P] [--marker-every-ms 1000] [--json FILE|-] [--against-echo [--echo-delay-ms MS]]
  [--server-pid PID]   (the target runs on this machine: its CPU and RSS read from /proc, by thread,
                        instead of scraping its /metrics every second, which costs it CPU)
With --dialect, --url is the bridge's path for it (/v1/media/<dialect>, tcp://host:port for
${TCP_DIALECT_NAMES}); --encoding is the ${ROOT_DIALECT_NAME} dialect's only. Only loopback targets are accepted unless
--allow-remote is given.`;

function fail(message: string): never {
  process.stderr.write(`voicebridge load: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function positiveInt(name: string, raw: string | undefined, dflt: number, min = 1, max = 100_000): number {
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    fail(`--${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      dialect: { type: 'string', default: ROOT_DIALECT_NAME },
      'auth-token': { type: 'string' },
      user: { type: 'string' },
      password: { type: 'string' },
      header: { type: 'string' },
      calls: { type: 'string', default: '10' },
      seconds: { type: 'string', default: '10' },
      ramp: { type: 'string' },
      rate: { type: 'string', default: '8000' },
      encoding: { type: 'string', default: 'binary' },
      codec: { type: 'string', default: 'slin' },
      token: { type: 'string' },
      secret: { type: 'string' },
      tenant: { type: 'string' },
      audio: { type: 'string', default: 'tone:440' },
      procs: { type: 'string', default: '1' },
      'marker-every-ms': { type: 'string', default: '1000' },
      json: { type: 'string' },
      'against-echo': { type: 'boolean', default: false },
      'echo-delay-ms': { type: 'string' },
      'allow-remote': { type: 'boolean', default: false },
      'server-pid': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.url === undefined && !values['against-echo'])
    fail('--url is required (or --against-echo alone)');
  if (values.url !== undefined) {
    let host: string;
    try {
      host = new URL(values.url).hostname;
    } catch {
      fail(`--url must be a ws:// or wss:// URL, got ${JSON.stringify(values.url)}`);
    }
    if (!LOOPBACK.test(host) && !values['allow-remote'])
      fail(`--url must be a loopback address, got ${host}`);
  }
  const calls = positiveInt('calls', values.calls, 10);
  const seconds = positiveInt('seconds', values.seconds, 10, 1, 86_400);
  let rate: 8000 | 16000;
  let codec: RunOptions['codec'];
  let encoding: RunOptions['encoding'];
  try {
    rate = parseTelephonyRate(Number(values.rate), '--rate');
    codec = parseCodec(values.codec, '--codec');
    encoding = parseEncoding(values.encoding, '--encoding');
  } catch (err) {
    fail((err as Error).message);
  }
  let dialect: DialectName;
  let dialectCodec: Codec | undefined;
  let auth: LegAuth | undefined;
  try {
    dialect = parseDialect(values.dialect, '--dialect');
    if (!isRootDialect(dialect)) {
      dialectCodec = parseDialectCodec(
        dialect,
        values.codec === 'slin' ? undefined : values.codec,
        '--codec',
      );
      const r = parseDialectRate(dialect, rate, dialectCodec, '--rate');
      if (r !== 8000 && r !== 16000) fail(`--rate for a load run must be 8000 or 16000, got ${r}`);
      rate = r;
      // The report names the wire codec; the leg encodes from the runner's PCM scratch.
      codec = dialectWireCodec(dialect, dialectCodec);
      auth = {
        token: values['auth-token'],
        username: values.user,
        password: values.password,
        header: values.header === undefined ? undefined : parseHeader(values.header, '--header'),
      };
    }
  } catch (err) {
    fail((err as Error).message);
  }
  if (!isRootDialect(dialect) && values['against-echo'])
    fail(
      `--against-echo serves the ${ROOT_DIALECT_NAME} dialect only; give --url of the bridge for --dialect`,
    );
  if (values.url !== undefined && isTcpDialect(dialect) && !values.url.startsWith('tcp://'))
    fail(`--url for ${dialect} must be tcp://host:port, got ${values.url}`);
  const rampSeconds = positiveInt('ramp', values.ramp, Math.min(10, Math.ceil(calls / 100)), 0, 3600);
  const procs = positiveInt('procs', values.procs, 1, 1, 64);
  if (values['echo-delay-ms'] !== undefined && !values['against-echo'])
    fail('--echo-delay-ms sets the bare echo of --against-echo; give --against-echo too');
  const echoDelayMs = positiveInt('echo-delay-ms', values['echo-delay-ms'], 0, 0, 10_000);
  const serverPid =
    values['server-pid'] === undefined
      ? undefined
      : positiveInt('server-pid', values['server-pid'], 0, 1, 2 ** 22);
  if (serverPid !== undefined && values['against-echo'])
    fail('--server-pid names the --url target; it cannot be given with --against-echo');
  if (serverPid !== undefined && !existsSync(`/proc/${serverPid}/stat`))
    fail(`--server-pid must be a running process on this machine, got ${serverPid}`);
  const secret = values.secret ?? process.env.MEDIA_SECRET ?? DEV_MEDIA_SECRET;
  const token =
    values.token ??
    (await mintToken({
      secret,
      ttlSeconds: rampSeconds + seconds + 3600,
      ...(values.tenant !== undefined ? { tenant: values.tenant } : {}),
    }));
  let background: Int16Array;
  try {
    // Ten seconds of the source, looped under the markers.
    background = asBackground(await renderAudio(parseAudioSpec(values.audio, '--audio'), rate, 10));
  } catch (err) {
    fail((err as Error).message);
  }

  const base: Omit<RunOptions, 'url'> = {
    calls,
    seconds,
    rampSeconds,
    rate,
    codec,
    encoding,
    token,
    background,
    chunkMs: dialectChunkMs(dialect),
    dialect,
    dialectCodec,
    auth,
    markerEveryMs: positiveInt('marker-every-ms', values['marker-every-ms'], 1000, 100, 60_000),
    markerBurstMs: 60,
    drainMs: 2_000,
    markerTimeoutMs: 5_000,
    idPrefix: `load-${process.pid}`,
  };

  const reports: LoadReport[] = [];
  const runOne = async (target: string, url: string, heldMs = 0, pid?: number) => {
    const options: RunOptions = {
      ...base,
      url,
      drainMs: base.drainMs + heldMs,
      markerTimeoutMs: base.markerTimeoutMs + heldMs,
    };
    const tty = process.stderr.isTTY;
    const result = await orchestrate(
      options,
      procs,
      (p) => {
        const line = progressText(target, p, calls);
        process.stderr.write(tty ? `\r\u001b[2K${line}` : `${line}\n`);
      },
      pid === undefined ? {} : { serverPid: pid },
    );
    if (tty) process.stderr.write('\n');
    const report = buildReport(target, options, result);
    reports.push(report);
    process.stdout.write(`${summaryText(report)}\n`);
  };

  if (values.url !== undefined) await runOne('bridge', values.url, 0, serverPid);
  if (values['against-echo']) {
    const echo = forkChild();
    const url = await new Promise<string>((resolve, reject) => {
      echo.on('message', (m: { type: string; url?: string; message?: string }) => {
        if (m.type === 'echo' && m.url !== undefined) resolve(m.url);
        else if (m.type === 'failed') reject(new Error(m.message));
      });
      echo.send({ type: 'echo', delayMs: echoDelayMs });
    });
    try {
      // Held frames come back echoDelayMs later: wait that much longer for the last ones.
      await runOne('echo', url, echoDelayMs);
    } finally {
      echo.send({ type: 'stop' });
    }
  }
  if (reports.length === 2) {
    const [b, e] = reports as [LoadReport, LoadReport];
    if (b.server !== null && e.server !== null && e.server.cpuMsPerCallSecond > 0) {
      process.stdout.write(
        `bridge / echo: CPU per call ${round2(b.server.cpuMsPerCallSecond / e.server.cpuMsPerCallSecond)}x, ` +
          `round-trip p99 ${b.roundTripMs.p99} vs ${e.roundTripMs.p99} ms\n`,
      );
    }
  }
  const json = JSON.stringify(reports.length === 1 ? reports[0] : { runs: reports }, null, 2);
  if (values.json === '-') process.stdout.write(`${json}\n`);
  else if (values.json !== undefined) await writeFile(values.json, `${json}\n`);
}

const round2 = (v: number) => Math.round(v * 100) / 100;

await main();
