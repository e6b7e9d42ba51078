/**
 * The command line of the bot dialects' stand-ins (src/emulator/stand-ins.ts), shared by
 * `npm run bot-emulator -- --dialect <name>` and `npm run realtime-emulator` (one dialect, its old name):
 * the common flags (--port, --host, --api-key, --reply-ms, --log-level), the stand-in's own, the usage
 * text written from the registry, then the stand-in listening until SIGINT or SIGTERM.
 */
import { parseArgs } from 'node:util';
import { MAX_REPLY_MS } from '../emulator/s2s/voice.js';
import {
  type NumberFlag,
  STAND_INS,
  type StandIn,
  type StandInFlags,
  type StandInName,
} from '../emulator/stand-ins.js';
import { createLogger } from '../log.js';

type Values = Record<string, string | boolean | undefined>;

const COMMON_FLAGS: StandInFlags = {
  port: { type: 'string' },
  host: { type: 'string', default: '127.0.0.1' },
  'api-key': { type: 'string' },
  'reply-ms': { type: 'string', default: '1500' },
  'log-level': { type: 'string', default: 'info' },
  help: { type: 'boolean', default: false },
};

const standIns = Object.entries(STAND_INS) as [StandInName, StandIn][];

function usage(command: string, only: StandInName | undefined): string {
  const listed = standIns.filter(([name]) => only === undefined || name === only);
  const dialect = only === undefined ? `--dialect <${listed.map(([n]) => n).join('|')}> ` : '';
  return `usage: npm run ${command} -- ${dialect}[--port N] [--host 127.0.0.1] [--api-key K] [--reply-ms 1500]
                    [--log-level info] [the dialect's flags]
  --port                default ${listed.map(([name, s]) => (only === undefined ? `${s.port} (${name})` : String(s.port))).join(', ')}
  --api-key             the one key accepted (default: any non-empty key)
  --reply-ms            length of each tone reply, unless the bot is told reply_ms=N (default 1500)
${listed.map(([name, s]) => (only === undefined ? `--dialect ${name}:\n${s.usage}` : s.usage)).join('')}`;
}

/** Runs the stand-in `--dialect` names (or `only`) with `args`; exits 2 naming a bad flag. */
export async function runStandIn(
  args: readonly string[],
  { command, only }: { command: string; only?: StandInName },
): Promise<void> {
  const text = usage(command, only);
  const fail = (message: string): never => {
    process.stderr.write(`${command}: ${message}\n${text}`);
    process.exit(2);
  };
  const common =
    only === undefined ? { ...COMMON_FLAGS, dialect: { type: 'string' } as const } : COMMON_FLAGS;
  const loose = parseArgs({ args: [...args], options: common, strict: false }).values as Values;
  if (loose.help === true) {
    process.stdout.write(text);
    process.exit(0);
  }
  const name = only ?? loose.dialect;
  if (typeof name !== 'string') return fail('--dialect is required');
  const standIn = STAND_INS[name as StandInName];
  if (standIn === undefined)
    return fail(`--dialect must be one of ${standIns.map(([n]) => n).join(', ')}, got ${name}`);
  let values: Values = {};
  try {
    values = parseArgs({ args: [...args], options: { ...common, ...standIn.flags } }).values as Values;
  } catch (err) {
    fail((err as Error).message);
  }
  const num: NumberFlag = (flag, min, max, decimal = false) => {
    const raw = values[flag] as string | undefined;
    const n = Number(raw);
    if (raw === undefined || !Number.isFinite(n) || (!decimal && !Number.isInteger(n)) || n < min || n > max)
      fail(`--${flag} must be ${decimal ? 'a number' : 'an integer'} from ${min} to ${max}, got ${raw}`);
    return n;
  };
  if (values.port === undefined) values.port = String(standIn.port);
  const apiKey = values['api-key'] as string | undefined;
  if (apiKey === '') fail('--api-key must not be empty');
  const port = num('port', 0, 65535);
  const host = values.host as string;
  let started: Awaited<ReturnType<StandIn['start']>> | undefined;
  try {
    started = await standIn.start(
      values,
      {
        port,
        host,
        apiKey,
        replyMs: num('reply-ms', 0, MAX_REPLY_MS),
        log: createLogger(values['log-level'] as string).child({ component: `${name}-emulator` }),
      },
      num,
      fail,
    );
  } catch (err) {
    fail(`cannot listen on ${host}:${port}: ${(err as Error).message}`);
  }
  const running = started!;
  process.stdout.write(`${running.lines.join('\n')}\n`);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
