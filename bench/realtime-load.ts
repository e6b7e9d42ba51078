/**
 * Calls with speech-to-speech bots: N concurrent synthetic calls through the bridge, each bot an
 * `openai-realtime` session served by the Realtime stand-in in its own process, beside the same calls with
 * the built-in echo bot (the targets take turns, each against a fresh bridge). Every call speaks a 1 s
 * tone then 1.5 s of silence, over and over; the stand-in's VAD takes each tone as a turn and answers
 * with a 1 s tone reply.
 *
 *   npm run build && npm run bench:realtime -- [--calls 100] [--seconds 20] [--codec pcmu|slin]
 *     [--targets realtime,echo] [--pin] [--json FILE]
 *
 * "Nothing lost", per call: every millisecond the caller sent reaches the model (the stand-in's record of
 * its input, to within one 60 ms append), and every reply the model sent before the call ended reaches
 * the caller (the caller's received audio against the stand-in's record of what it sent). The bridge's
 * CPU per call-second comes from its /metrics. With --pin the bridge runs on core 1, the stand-in and
 * this generator on core 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { generateTone } from '../src/audio/tone.js';
import { mintToken } from '../src/auth/jwt.js';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';
import { DEV_MEDIA_SECRET } from '../src/config.js';
import { type CallReport, SyntheticCall } from '../src/emulator/caller.js';
import { sampleServer } from '../src/load/orchestrator.js';
import { freePort } from './capacity-lib.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '20' },
    codec: { type: 'string', default: 'pcmu' },
    targets: { type: 'string', default: 'realtime,echo' },
    pin: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});
const CALLS = Number(values.calls);
const SECONDS = Number(values.seconds);
const CODEC = values.codec === 'slin' ? 'slin' : 'pcmu';
const REPLY_MS = 1000;

function start(cmd: string[], env: Record<string, string>, core: number | undefined): ChildProcess {
  const argv = core === undefined ? cmd : ['taskset', '-c', String(core), ...cmd];
  return spawn(argv[0]!, argv.slice(1), {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function waitHttp(url: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${url} did not answer within 20 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface StandInSession {
  responses: { sent_ms: number; status: string }[];
  input: { rate: number; samples: number }[];
}

async function run(target: 'realtime' | 'echo') {
  const bridgePort = await freePort();
  const modelPort = await freePort();
  const model =
    target === 'realtime'
      ? start(
          [
            'node',
            '--import',
            'tsx',
            'src/cli/realtime-emulator.ts',
            '--port',
            String(modelPort),
            '--reply-ms',
            String(REPLY_MS),
          ],
          {},
          values.pin ? 0 : undefined,
        )
      : undefined;
  const bridge = start(
    ['node', ...BRIDGE_NODE_FLAGS, 'dist/cli/main.js'],
    {
      PORT: String(bridgePort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'development',
      MAX_SESSIONS: String(CALLS * 2),
      ...(target === 'realtime'
        ? {
            BOT_URL: `ws://127.0.0.1:${modelPort}/v1/realtime?model=gpt-realtime`,
            BOT_DIALECT: 'openai-realtime',
            BOT_API_KEY: 'sk-bench',
          }
        : { BOT_URL: 'builtin:echo' }),
    },
    values.pin ? 1 : undefined,
  );
  try {
    if (model !== undefined) await waitHttp(`http://127.0.0.1:${modelPort}/emulator/realtime/sessions`);
    await waitHttp(`http://127.0.0.1:${bridgePort}/healthz`);
    const rate = 8000;
    // 1 s of tone, 1.5 s of silence, repeated: a turn every 2.5 s.
    const turn = new Int16Array(rate * 2.5);
    turn.set(generateTone(700, rate, rate, 0.3));
    const audio = new Int16Array(rate * SECONDS);
    for (let at = 0; at < audio.length; at += turn.length)
      audio.set(turn.subarray(0, Math.min(turn.length, audio.length - at)), at);
    const token = await mintToken({ secret: DEV_MEDIA_SECRET, ttlSeconds: 3600 });
    const metrics = `http://127.0.0.1:${bridgePort}/metrics`;
    const cpu0 = await sampleServer(metrics);
    const t0 = performance.now();
    const reports: CallReport[] = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        new SyntheticCall({
          url: `ws://127.0.0.1:${bridgePort}/v1/media`,
          token,
          sessionId: `${target}-${i}`,
          customerPhone: '+15550100',
          direction: 'inbound',
          format: {
            codec: CODEC,
            inputRate: rate,
            outputRate: rate,
            encoding: 'binary',
            chunkBytes: CODEC === 'slin' ? 320 : 160,
          },
          audio,
          tailMs: 2_000,
        }).run(),
      ),
    );
    const cpu1 = await sampleServer(metrics);
    const wall = (performance.now() - t0) / 1000;
    const failed = reports.filter((r) => r.state === 'failed').length;
    const callSeconds = reports.reduce((n, r) => n + r.secondsSent, 0);
    const cpuMsPerCallSecond =
      cpu0 && cpu1 ? ((cpu1.cpuSeconds - cpu0.cpuSeconds) * 1000) / callSeconds : Number.NaN;
    const out: Record<string, unknown> = {
      target,
      calls: CALLS,
      failed,
      wallSeconds: Math.round(wall * 10) / 10,
      cpuMsPerCallSecond: Math.round(cpuMsPerCallSecond * 1000) / 1000,
      rssMb: cpu1 ? Math.round(cpu1.rssBytes / 2 ** 20) : undefined,
      // With speech-to-speech bots the gaps between replies count too: a pause, not a pacing figure.
      interArrivalP99Ms: Math.max(...reports.map((r) => r.interArrivalMs.p99)),
    };
    if (target === 'realtime') {
      const res = await fetch(`http://127.0.0.1:${modelPort}/emulator/realtime/sessions`);
      const { sessions } = (await res.json()) as { sessions: StandInSession[] };
      const inputMs = sessions.map((s) => s.input.reduce((n, seg) => n + (seg.samples / seg.rate) * 1000, 0));
      const replyMs = sessions.map((s) => s.responses.reduce((n, r) => n + r.sent_ms, 0));
      const sentMs = reports.map((r) => r.secondsSent * 1000);
      const gotMs = reports.map((r) => r.secondsReceived * 1000);
      const sum = (x: number[]) => x.reduce((a, b) => a + b, 0);
      Object.assign(out, {
        modelSessions: sessions.length,
        callerMsSent: Math.round(sum(sentMs)),
        modelMsHeard: Math.round(sum(inputMs)),
        // Sessions are not matched to calls one by one (the stand-in does not know the call's id): the
        // least any model session heard, against the least any call sent.
        leastHeardMs: Math.round(Math.min(...inputMs)),
        leastSentMs: Math.round(Math.min(...sentMs)),
        modelMsReplied: Math.round(sum(replyMs)),
        callerMsReceived: Math.round(sum(gotMs)),
        replies: sessions.reduce((n, s) => n + s.responses.length, 0),
      });
    } else {
      Object.assign(out, {
        callerMsSent: Math.round(reports.reduce((n, r) => n + r.secondsSent * 1000, 0)),
        callerMsReceived: Math.round(reports.reduce((n, r) => n + r.secondsReceived * 1000, 0)),
      });
    }
    return out;
  } finally {
    bridge.kill('SIGTERM');
    model?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
  }
}

const results = [];
for (const t of values.targets.split(',') as ('realtime' | 'echo')[]) {
  const r = await run(t);
  console.log(JSON.stringify(r));
  results.push(r);
}
if (values.json !== undefined) await writeFile(values.json, `${JSON.stringify(results, null, 2)}\n`);
