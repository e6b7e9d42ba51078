#!/usr/bin/env node
/**
 * `npm run realtime-emulator -- [--port 9191] [--host 127.0.0.1] [--api-key K] [--reply-ms N]
 *  [--delta-ms N] [--output-rate-factor N] [--tls-cert F --tls-key F] [--log-level L]`: the OpenAI
 * Realtime stand-in on its own (src/emulator/realtime/), for bots and tests without an OpenAI key.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createRealtimeEmulator, type RealtimeEmulator } from '../emulator/realtime/server.js';
import { MAX_REPLY_MS } from '../emulator/s2s/voice.js';
import { createLogger } from '../log.js';

const USAGE = `usage: npm run realtime-emulator -- [--port 9191] [--host 127.0.0.1] [--api-key K] [--reply-ms 1500]
                                     [--delta-ms 100] [--output-rate-factor 4] [--tls-cert F --tls-key F]
                                     [--log-level info]
  --api-key             the one bearer key accepted (default: any non-empty key)
  --reply-ms            length of each tone reply, unless instructions say reply_ms=N (default 1500)
  --delta-ms            audio per response.output_audio.delta (default 100)
  --output-rate-factor  deltas go out this many times faster than real time; 0: as fast as the socket
                        takes them (default 4)
  --tls-cert, --tls-key PEM files: serve wss:// and https:// (the openai package's client dials wss: only)
`;

function fail(message: string): never {
  process.stderr.write(`realtime-emulator: ${message}\n${USAGE}`);
  process.exit(2);
}

let values: Record<string, string | boolean | undefined>;
try {
  values = parseArgs({
    options: {
      port: { type: 'string', default: '9191' },
      host: { type: 'string', default: '127.0.0.1' },
      'api-key': { type: 'string' },
      'reply-ms': { type: 'string', default: '1500' },
      'delta-ms': { type: 'string', default: '100' },
      'output-rate-factor': { type: 'string', default: '4' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      help: { type: 'boolean', default: false },
    },
  }).values;
} catch (err) {
  fail((err as Error).message);
}
if (values.help === true) {
  process.stdout.write(USAGE);
  process.exit(0);
}

/** A numeric flag in [min, max], integer unless `decimal`. */
function numberFlag(name: string, min: number, max: number, decimal = false): number {
  const raw = values[name] as string;
  const n = Number(raw);
  if (!Number.isFinite(n) || (!decimal && !Number.isInteger(n)) || n < min || n > max) {
    fail(`--${name} must be ${decimal ? 'a number' : 'an integer'} from ${min} to ${max}, got ${raw}`);
  }
  return n;
}

const port = numberFlag('port', 0, 65535);
const replyMs = numberFlag('reply-ms', 0, MAX_REPLY_MS);
const deltaMs = numberFlag('delta-ms', 10, 1000);
const outputRateFactor = numberFlag('output-rate-factor', 0, 1000, true);
const certFile = values['tls-cert'] as string | undefined;
const keyFile = values['tls-key'] as string | undefined;
if ((certFile === undefined) !== (keyFile === undefined)) fail('--tls-cert and --tls-key go together');
let tls: { cert: Buffer; key: Buffer } | undefined;
if (certFile !== undefined && keyFile !== undefined) {
  try {
    tls = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
  } catch (err) {
    fail(`cannot read the TLS files: ${(err as Error).message}`);
  }
}
const apiKey = values['api-key'] as string | undefined;
if (apiKey === '') fail('--api-key must not be empty');

const log = createLogger(values['log-level'] as string).child({ component: 'realtime-emulator' });
const emulator: RealtimeEmulator = createRealtimeEmulator({
  replyMs,
  deltaMs,
  outputRateFactor,
  log,
  ...(apiKey !== undefined ? { apiKey } : {}),
  ...(tls !== undefined ? { tls } : {}),
});
let url: string;
try {
  url = await emulator.listen(port, values.host as string);
} catch (err) {
  fail(`cannot listen on ${values.host}:${port}: ${(err as Error).message}`);
}
process.stdout.write(
  [
    `realtime stand-in listening on ${url}`,
    `  WebSocket: ${emulator.wsUrl('gpt-realtime')} (Authorization: Bearer <${apiKey === undefined ? 'any key' : 'the --api-key'}>)`,
    `  replies: tones of ${replyMs} ms (reply_ms=N in instructions for longer), ${deltaMs} ms deltas at ${outputRateFactor > 0 ? `${outputRateFactor}x real time` : 'socket speed'}`,
    `  control API: ${url}/emulator/realtime/sessions`,
    '',
  ].join('\n'),
);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  emulator.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
