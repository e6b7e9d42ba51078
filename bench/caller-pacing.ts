/**
 * How evenly the synthetic callers' chunks reach the far end: N calls of the default dialect (slin,
 * 8 kHz, 20 ms binary chunks) against a bare WebSocket sink in a child process, which notes when each
 * chunk arrives. Prints the inter-arrival percentiles over every call's gaps (the first second of each
 * call left out: connection set-up), for the load generator's calls (`--via load`) and for the
 * emulator's caller (`--via call`, the path of `npm run call` and the tests' synthetic calls).
 *
 *   npx tsx bench/caller-pacing.ts --via load --calls 100 --seconds 10
 *   npx tsx bench/caller-pacing.ts --via call --calls 100 --seconds 10
 */
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { WebSocketServer } from 'ws';
import { SyntheticCall } from '../src/emulator/caller.js';
import { LoadRun } from '../src/load/runner.js';

const SKIP_MS = 1_000;

function sink(): void {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  const gaps: number[] = [];
  wss.on('connection', (ws) => {
    let first = -1;
    let last = -1;
    ws.on('message', (_d, isBinary) => {
      if (!isBinary) return;
      const now = performance.now();
      if (first < 0) first = now;
      if (last >= 0 && now - first > SKIP_MS) gaps.push(now - last);
      last = now;
    });
  });
  wss.on('listening', () => {
    const address = wss.address();
    if (typeof address === 'object' && address !== null) process.send!({ port: address.port });
  });
  process.on('message', (m: { done?: boolean }) => {
    if (m.done !== true) return;
    gaps.sort((a, b) => a - b);
    const at = (q: number) => gaps[Math.min(gaps.length - 1, Math.floor(gaps.length * q))] ?? Number.NaN;
    process.send!({ n: gaps.length, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: gaps.at(-1) });
    wss.close();
    process.disconnect();
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      via: { type: 'string', default: 'load' },
      calls: { type: 'string', default: '100' },
      seconds: { type: 'string', default: '10' },
      sink: { type: 'boolean', default: false },
    },
  });
  if (values.sink) return sink();
  const calls = Number(values.calls);
  const seconds = Number(values.seconds);
  const child = fork(fileURLToPath(import.meta.url), ['--sink'], { execArgv: process.execArgv });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m: { port: number }) => resolve(m.port)),
  );
  const url = `ws://127.0.0.1:${port}/v1/media`;
  const cpu0 = process.cpuUsage();
  if (values.via === 'load') {
    await new LoadRun({
      url,
      calls,
      seconds,
      rampSeconds: 1,
      rate: 8000,
      codec: 'slin',
      encoding: 'binary',
      token: undefined,
      background: new Int16Array(8000),
      chunkMs: 20,
      markerEveryMs: 1000,
      markerBurstMs: 60,
      drainMs: 200,
      markerTimeoutMs: 1000,
      idPrefix: 'bench',
    }).run();
  } else {
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < calls; i++) {
      const call = new SyntheticCall({
        url,
        sessionId: `bench-${i}`,
        customerPhone: '15550100000',
        direction: 'inbound',
        format: { codec: 'slin', inputRate: 8000, outputRate: 8000, encoding: 'binary', chunkBytes: 320 },
        audio: new Int16Array(8000 * seconds),
        tailMs: 0,
      });
      runs.push(call.run());
    }
    await Promise.all(runs);
  }
  const cpu = process.cpuUsage(cpu0);
  child.send({ done: true });
  const figures = await new Promise((resolve) => child.once('message', resolve));
  console.log(
    JSON.stringify({
      via: values.via,
      calls,
      seconds,
      senderCpuMs: Math.round((cpu.user + cpu.system) / 1000),
      ...(figures as object),
    }),
  );
}

await main();
