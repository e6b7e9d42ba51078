#!/usr/bin/env node
/**
 * `npm run bot-emulator -- --dialect <name> [--port N] [--host H] [--api-key K] [--reply-ms N]
 *  [--turn-silence-ms N] [--log-level L] [the dialect's flags]`: a local stand-in for a speech-to-speech
 * vendor, for bots and tests without the vendor's key. One table below holds each dialect's flags and how
 * it starts; `--help` lists them.
 */
import { parseArgs } from 'node:util';
import { createDeepgramAgentEmulator } from '../emulator/deepgram-agent/server.js';
import { createGeminiLiveEmulator } from '../emulator/gemini-live/server.js';
import { MAX_REPLY_MS } from '../emulator/s2s/voice.js';
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
  'gemini-live': {
    port: 9494,
    usage: `  --chunk-ms            audio per modelTurn part (default 40)
  --output-rate-factor  audio goes out this many times faster than real time; 0: socket speed (default 4)
  --setup-delay-ms      wait before setupComplete (default 0)
  --connection-ms       a connection's life: goAway, then close 1011 (default 600000; 0: no limit)
  --go-away-lead-ms     goAway comes this long before the end (default 60000)
  --json-frames         binary (as Google sends) or text (default binary)
  --refuse-resume-while-open
                        a resumption while the old connection is open is closed with 1011
`,
    flags: {
      'chunk-ms': { type: 'string', default: '40' },
      'output-rate-factor': { type: 'string', default: '4' },
      'setup-delay-ms': { type: 'string', default: '0' },
      'connection-ms': { type: 'string', default: '600000' },
      'go-away-lead-ms': { type: 'string', default: '60000' },
      'json-frames': { type: 'string', default: 'binary' },
      'refuse-resume-while-open': { type: 'boolean', default: false },
    },
    async start(v, c, num) {
      const jsonFrames = v['json-frames'];
      if (jsonFrames !== 'binary' && jsonFrames !== 'text')
        fail(`--json-frames must be binary or text, got ${jsonFrames}`);
      const emulator = createGeminiLiveEmulator({
        ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
        replyMs: c.replyMs,
        turnSilenceMs: c.turnSilenceMs,
        chunkMs: num('chunk-ms', 10, 1000),
        outputRateFactor: num('output-rate-factor', 0, 1000, true),
        setupDelayMs: num('setup-delay-ms', 0, 60_000),
        connectionMs: num('connection-ms', 0, 86_400_000),
        goAwayLeadMs: num('go-away-lead-ms', 0, 600_000),
        jsonFrames,
        refuseResumeWhileOpen: v['refuse-resume-while-open'] === true,
        log: c.log,
      });
      const url = await emulator.listen(c.port, c.host);
      return {
        lines: [
          `gemini-live stand-in listening on ${url}`,
          `  WebSocket: ${emulator.wsUrl(c.apiKey ?? 'any-key')} (or the key as x-goog-api-key)`,
          `  @google/genai: new GoogleGenAI({ apiKey, httpOptions: { baseUrl: '${url}' } })`,
          `  control API: ${url}/emulator/gemini-live/sessions`,
        ],
        close: () => emulator.close(),
      };
    },
  },
  'deepgram-agent': {
    port: 9595,
    usage: `  --chunk-ms            audio per binary frame (default 20)
  --output-rate-factor  audio goes out this many times faster than real time; 0: socket speed (default 4)
  --settings-delay-ms   wait before SettingsApplied (default 0)
  --idle-timeout-ms     no audio nor KeepAlive for this long: Error CLIENT_MESSAGE_TIMEOUT, close
                        (default 10000; 0: never)
  --max-session-ms      a session's longest life (default 7200000)
`,
    flags: {
      'chunk-ms': { type: 'string', default: '20' },
      'output-rate-factor': { type: 'string', default: '4' },
      'settings-delay-ms': { type: 'string', default: '0' },
      'idle-timeout-ms': { type: 'string', default: '10000' },
      'max-session-ms': { type: 'string', default: '7200000' },
    },
    async start(_v, c, num) {
      const emulator = createDeepgramAgentEmulator({
        ...(c.apiKey !== undefined ? { apiKey: c.apiKey } : {}),
        replyMs: c.replyMs,
        turnSilenceMs: c.turnSilenceMs,
        chunkMs: num('chunk-ms', 10, 1000),
        outputRateFactor: num('output-rate-factor', 0, 1000, true),
        settingsDelayMs: num('settings-delay-ms', 0, 60_000),
        idleTimeoutMs: num('idle-timeout-ms', 0, 3_600_000),
        maxSessionMs: num('max-session-ms', 0, 86_400_000),
        log: c.log,
      });
      const url = await emulator.listen(c.port, c.host);
      return {
        lines: [
          `deepgram-agent stand-in listening on ${url}`,
          `  WebSocket: ${emulator.wsUrl()} (Authorization: Token <${c.apiKey === undefined ? 'any key' : 'the --api-key'}>)`,
          `  @deepgram/sdk: new DeepgramClient({ apiKey, baseUrl: '${url.replace(/^http/, 'ws')}' })`,
          `  control API: ${url}/emulator/deepgram-agent/sessions`,
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
