#!/usr/bin/env node
/**
 * `npm run bot-emulator -- --dialect <name> [--port N] [--host H] [--api-key K] [--reply-ms N]
 *  [--turn-silence-ms N] [--log-level L] [the dialect's flags]`: a local stand-in for a speech-to-speech
 * vendor, for bots and tests without the vendor's key. One table below holds each dialect's flags and how
 * it starts; `--help` lists them.
 */
import { parseArgs } from 'node:util';
import { FORMAT_NAMES, type FormatName, isFormatName } from '../emulator/elevenlabs-agent/formats.js';
import { createElevenLabsEmulator } from '../emulator/elevenlabs-agent/server.js';
import { MAX_REPLY_MS } from '../emulator/realtime/voice.js';
import { createUltravoxEmulator } from '../emulator/ultravox/server.js';
import { createLogger, type Logger } from '../log.js';

type Values = Record<string, string | boolean | undefined>;
type Flags = Record<string, { type: 'string' | 'boolean'; default?: string | boolean }>;

interface Common {
  readonly port: number;
  readonly host: string;
  readonly apiKey: string | undefined;
  readonly replyMs: number;
  readonly turnSilenceMs: number;
  readonly log: Logger;
}

interface Started {
  /** What to print once listening. */
  readonly lines: string[];
  close(): Promise<void>;
}

interface Dialect {
  readonly port: number;
  readonly usage: string;
  readonly flags: Flags;
  start(values: Values, common: Common, num: NumberFlag): Promise<Started>;
}

type NumberFlag = (name: string, min: number, max: number, decimal?: boolean) => number;

const DIALECTS: Record<string, Dialect> = {
  'elevenlabs-agent': {
    port: 9292,
    usage: `  --agent-id            the agent id printed in the WebSocket URL (default agent_standin); any id works
  --private             agents need a signed URL (get-signed-url with the key) to connect
  --input-format, --output-format
                        ${FORMAT_NAMES.join(', ')} (default pcm_16000)
  --first-message-ms    the agent greets with a reply this long (default 0: the caller speaks first)
  --max-duration-ms     the conversation ends after this long (default 0: no limit)
  --ping-interval-ms    a ping this often (default 3000; 0: none)
  --pong-timeout-ms     a pong later than this is missed (default 1000)
  --max-missed-pongs    missed pongs in a row that close the socket (default 1)
  --late-audio-chunks   chunks of an interrupted reply sent after the interruption (default 0)
  --reply-turn-after-interruption
                        same (the reply shares the interruption's event_id, as the real server) or next
  --chunk-ms            audio per audio event (default 100)
  --output-rate-factor  audio goes out this many times faster than real time; 0: socket speed (default 4)
`,
    flags: {
      'agent-id': { type: 'string', default: 'agent_standin' },
      private: { type: 'boolean', default: false },
      'input-format': { type: 'string', default: 'pcm_16000' },
      'output-format': { type: 'string', default: 'pcm_16000' },
      'first-message-ms': { type: 'string', default: '0' },
      'max-duration-ms': { type: 'string', default: '0' },
      'ping-interval-ms': { type: 'string', default: '3000' },
      'pong-timeout-ms': { type: 'string', default: '1000' },
      'max-missed-pongs': { type: 'string', default: '1' },
      'late-audio-chunks': { type: 'string', default: '0' },
      'reply-turn-after-interruption': { type: 'string', default: 'same' },
      'chunk-ms': { type: 'string', default: '100' },
      'output-rate-factor': { type: 'string', default: '4' },
    },
    async start(v, c, num) {
      const format = (name: string): FormatName => {
        const f = v[name];
        if (!isFormatName(f)) fail(`--${name} must be one of ${FORMAT_NAMES.join(', ')}, got ${f}`);
        return f;
      };
      const turn = v['reply-turn-after-interruption'];
      if (turn !== 'same' && turn !== 'next')
        fail(`--reply-turn-after-interruption must be same or next, got ${turn}`);
      const agentId = v['agent-id'] as string;
      if (agentId === '') fail('--agent-id must not be empty');
      const emulator = createElevenLabsEmulator({
        ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
        replyMs: c.replyMs,
        turnSilenceMs: c.turnSilenceMs,
        defaultAgent: {
          private: v.private === true,
          inputFormat: format('input-format'),
          outputFormat: format('output-format'),
          firstMessageMs: num('first-message-ms', 0, MAX_REPLY_MS),
          maxDurationMs: num('max-duration-ms', 0, 86_400_000),
        },
        pingIntervalMs: num('ping-interval-ms', 0, 600_000),
        pongTimeoutMs: num('pong-timeout-ms', 1, 600_000),
        maxMissedPongs: num('max-missed-pongs', 1, 1000),
        lateAudioChunks: num('late-audio-chunks', 0, 1000),
        replyTurnAfterInterruption: turn,
        chunkMs: num('chunk-ms', 10, 1000),
        outputRateFactor: num('output-rate-factor', 0, 1000, true),
        log: c.log,
      });
      const url = await emulator.listen(c.port, c.host);
      const key = c.apiKey === undefined ? 'any key' : 'the --api-key';
      return {
        lines: [
          `elevenlabs-agent stand-in listening on ${url}`,
          `  WebSocket: ${emulator.wsUrl(agentId)}${v.private === true ? ' (private: connect with a signed URL)' : ''}`,
          `  signed URL: GET ${url}/v1/convai/conversation/get-signed-url?agent_id=${agentId} (xi-api-key: ${key})`,
          `  control API: ${url}/emulator/elevenlabs-agent/sessions`,
        ],
        close: () => emulator.close(),
      };
    },
  },
  ultravox: {
    port: 9393,
    usage: `  --chunk-ms            audio per binary frame (default 20)
`,
    flags: { 'chunk-ms': { type: 'string', default: '20' } },
    async start(_v, c, num) {
      const emulator = createUltravoxEmulator({
        ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
        replyMs: c.replyMs,
        turnSilenceMs: c.turnSilenceMs,
        chunkMs: num('chunk-ms', 10, 1000),
        log: c.log,
      });
      const url = await emulator.listen(c.port, c.host);
      return {
        lines: [
          `ultravox stand-in listening on ${url}`,
          `  create a call: POST ${url}/api/calls (X-API-Key: ${c.apiKey === undefined ? 'any key' : 'the --api-key'}), medium.serverWebSocket; then dial its joinUrl`,
          `  control API: ${url}/emulator/ultravox/sessions`,
        ],
        close: () => emulator.close(),
      };
    },
  },
};

const COMMON_FLAGS: Flags = {
  dialect: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string', default: '127.0.0.1' },
  'api-key': { type: 'string' },
  'reply-ms': { type: 'string', default: '1500' },
  'turn-silence-ms': { type: 'string', default: '500' },
  'log-level': { type: 'string', default: 'info' },
  help: { type: 'boolean', default: false },
};

const USAGE = `usage: npm run bot-emulator -- --dialect <${Object.keys(DIALECTS).join('|')}> [--port N] [--host 127.0.0.1]
                                [--api-key K] [--reply-ms 1500] [--turn-silence-ms 500] [--log-level info] [...]
  --port             default ${Object.entries(DIALECTS)
    .map(([name, d]) => `${d.port} (${name})`)
    .join(', ')}
  --api-key          the one key accepted (default: any non-empty key)
  --reply-ms         length of each tone reply, unless a prompt or text says reply_ms=N (default 1500)
  --turn-silence-ms  silence that ends the caller's turn (default 500)
${Object.entries(DIALECTS)
  .map(([name, d]) => `--dialect ${name}:\n${d.usage}`)
  .join('')}`;

function fail(message: string): never {
  process.stderr.write(`bot-emulator: ${message}\n${USAGE}`);
  process.exit(2);
}

const args = process.argv.slice(2);
const loose = parseArgs({ args, options: COMMON_FLAGS, strict: false }).values as Values;
if (loose.help === true) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const dialectName = loose.dialect;
if (typeof dialectName !== 'string') fail('--dialect is required');
const dialect = DIALECTS[dialectName];
if (dialect === undefined)
  fail(`--dialect must be one of ${Object.keys(DIALECTS).join(', ')}, got ${dialectName}`);

let values: Values;
try {
  values = parseArgs({ args, options: { ...COMMON_FLAGS, ...dialect.flags } }).values as Values;
} catch (err) {
  fail((err as Error).message);
}

/** A numeric flag in [min, max], integer unless `decimal`. */
const num: NumberFlag = (name, min, max, decimal = false) => {
  const raw = values[name] as string;
  const n = Number(raw);
  if (raw === undefined || !Number.isFinite(n) || (!decimal && !Number.isInteger(n)) || n < min || n > max)
    fail(`--${name} must be ${decimal ? 'a number' : 'an integer'} from ${min} to ${max}, got ${raw}`);
  return n;
};

if (values.port === undefined) values.port = String(dialect.port);
const apiKey = values['api-key'] as string | undefined;
if (apiKey === '') fail('--api-key must not be empty');
const common: Common = {
  port: num('port', 0, 65535),
  host: values.host as string,
  apiKey,
  replyMs: num('reply-ms', 0, MAX_REPLY_MS),
  turnSilenceMs: num('turn-silence-ms', 50, 10_000),
  log: createLogger(values['log-level'] as string).child({ component: `${dialectName}-emulator` }),
};

let started: Started;
try {
  started = await dialect.start(values, common, num);
} catch (err) {
  fail(`cannot listen on ${common.host}:${common.port}: ${(err as Error).message}`);
}
process.stdout.write(`${started.lines.join('\n')}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  started.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
