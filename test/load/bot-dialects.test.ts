/**
 * bench:bot-dialects' own parts: the dialects it measures read from the registry and the stand-in list
 * (a dialect that lands with its stand-in joins), the bridge's environment for each stand-in's bot (which
 * the bridge's configuration accepts, and which names a stand-in that answers on its records' path), the
 * stand-ins' command lines, the calls' timeline, and how loss and the CPU ratios are read.
 */
import { parseArgs } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BASELINE,
  BRIDGE_ENV,
  botEnv,
  busyPct,
  callerAudio,
  callPlan,
  coreTimes,
  LEAD_MS,
  lossOf,
  MAX_LEAD_S,
  parseBotDialectsArgs,
  ratios,
  standInArgs,
  standInAudio,
  standInBridgeEnv,
  standInDialects,
  TURN_MS,
} from '../../bench/bot-dialects-lib.js';
import { loadConfig } from '../../src/config.js';
import { BOT_DIALECT_DECLS, BOTS, type BotDialectDecl, botRegistry } from '../../src/dialects/index.js';
import { STAND_INS, type StandIn, type StandInValues } from '../../src/emulator/stand-ins.js';
import { createLogger } from '../../src/log.js';

const registered = Object.entries(STAND_INS).filter(([name]) => BOTS.dialect(name) !== undefined) as [
  string,
  StandIn,
][];

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** Starts a stand-in in this process from its declaration, its flags at their defaults, on a free port. */
async function startStandIn(standIn: StandIn): Promise<string> {
  const values: Record<string, string | boolean | undefined> = {};
  for (const [flag, spec] of Object.entries(standIn.flags)) values[flag] = spec.default;
  const fail = (message: string): never => {
    throw new Error(message);
  };
  const started = await standIn.start(
    values as StandInValues,
    { port: 0, host: '127.0.0.1', apiKey: undefined, replyMs: 500, log: createLogger('silent') },
    (flag, min, max) => {
      const n = Number(values[flag]);
      return Number.isFinite(n) && n >= min && n <= max ? n : fail(`--${flag}: ${values[flag]}`);
    },
    fail,
  );
  close = started.close;
  const base = /listening on (http:\/\/\S+)/.exec(started.lines[0]!)?.[1];
  if (base === undefined) throw new Error(`no address in ${started.lines[0]}`);
  return base;
}

describe('bench:bot-dialects', () => {
  it('measures every registered bot dialect with a stand-in, and one that lands with its stand-in joins', () => {
    const today = standInDialects();
    expect([...today].sort()).toEqual(registered.map(([name]) => name).sort());
    expect(today).toEqual(expect.arrayContaining(['openai-realtime', 'elevenlabs-agent', 'deepgram-agent']));
    for (const other of [BASELINE, 'twilio', 'builtin']) expect(today).not.toContain(other);
    // A dialect registered later, with a stand-in listed under its name.
    const later: BotDialectDecl = { name: 'later-agent', url: { kind: 'ws' }, fields: [], summary: 'later' };
    const withLater = botRegistry([...(BOT_DIALECT_DECLS as readonly BotDialectDecl[]), later]);
    const standIn = STAND_INS['openai-realtime']!;
    expect(standInDialects(withLater, { ...STAND_INS, 'later-agent': standIn })).toEqual([
      ...today,
      'later-agent',
    ]);
    expect(parseBotDialectsArgs([], 2).targets).toEqual([BASELINE, ...today]);
  });

  it.each(registered)(
    '%s: its bot is a default bot the bridge accepts, toward a stand-in that keeps records',
    async (name, standIn) => {
      const base = await startStandIn(standIn);
      const env = standInBridgeEnv(standIn.bot(base));
      expect(env.BOT_DIALECT).toBe(name);
      // Over bench:capacity's bridge environment, as the bench starts it.
      const config = loadConfig({ BOT_URL: 'builtin:echo', ...env, NODE_ENV: 'development' });
      expect(config.bot.dialect).toBe(name);
      expect(config.outboundBufferMs).toBe(4000);
      const records = (await (await fetch(`${base}${standIn.sessionsPath}`)).json()) as {
        sessions: unknown[];
      };
      expect(records.sessions).toEqual([]);
    },
  );

  it('writes a bot as the environment, by the registry, and names a field it cannot', () => {
    expect(
      botEnv({ dialect: 'deepgram-agent', url: 'ws://h/a', api_key: 'k-123', settings: { agent: {} } }),
    ).toEqual({
      BOT_DIALECT: 'deepgram-agent',
      BOT_URL: 'ws://h/a',
      BOT_API_KEY: 'k-123',
      BOT_SETTINGS: '{"agent":{}}',
    });
    expect(() => botEnv({ dialect: 'twilio', parameters: { a: 'b' } })).toThrow(
      /bot\.parameters has no environment twin/,
    );
    expect(() => botEnv({ dialect: 'bridge', colour: 'red' })).toThrow(/bot\.colour is no bot field/);
  });

  it('starts each stand-in with replies at real time, ahead by the lead where it paces them, flags it takes', () => {
    for (const [name, standIn] of Object.entries(STAND_INS) as [string, StandIn][]) {
      const args = standInArgs(standIn, 30_500);
      expect(args).toEqual(expect.arrayContaining(['--reply-ms', '30500']));
      if ('output-rate-factor' in standIn.flags) {
        expect(args, name).toEqual(
          expect.arrayContaining(['--output-rate-factor', '1', '--lead-ms', String(LEAD_MS)]),
        );
      } else expect(args, name).not.toContain('--output-rate-factor');
      const common = {
        'log-level': { type: 'string' },
        'reply-ms': { type: 'string' },
      } as const;
      expect(() => parseArgs({ args, options: { ...common, ...standIn.flags } }), name).not.toThrow();
    }
  });

  it('times the calls so every reply runs through the CPU window and ends before its caller hangs up', () => {
    for (const calls of [2, 200, 1000]) {
      const seconds = 20;
      const p = callPlan(calls, seconds);
      // A reply starts within about 1.5 s of its call (the turn, the VAD's silence, the bot's set-up).
      const replyFrom = (connectS: number) => connectS + 1.5;
      const windowFrom = p.rampSeconds + p.window.settleSeconds;
      const windowTo = p.rampSeconds + seconds;
      // The first call (connected at 0, its reply starting at once at the earliest) is still sent, the
      // most ahead any stand-in runs, as the window ends.
      expect(p.replyMs / 1000 - MAX_LEAD_S).toBeGreaterThan(windowTo);
      // The last call connects at the ramp's end: its reply has started when the window opens ...
      expect(replyFrom(p.rampSeconds)).toBeLessThanOrEqual(windowFrom);
      // ... and has ended (started late, lasting its length) before its caller hangs up.
      expect(replyFrom(p.rampSeconds) + p.replyMs / 1000).toBeLessThan(windowTo + p.drainMs / 1000);
      expect(p.window.trailSeconds).toBe(0);
      // Ultravox's stand-in runs ahead by half the bridge's outbound buffer.
      expect(Number(BRIDGE_ENV.OUTBOUND_BUFFER_MS) / 2 / 1000).toBe(MAX_LEAD_S);
      expect(p.audioSeconds).toBeGreaterThan(p.rampSeconds + seconds);
    }
    const audio = callerAudio(8000, 3);
    const turn = Math.round((8000 * TURN_MS) / 1000);
    expect(audio.length).toBe(24_000);
    expect(Math.max(...audio.subarray(0, turn))).toBeGreaterThan(9000);
    expect(audio.subarray(turn).every((v) => v === 0)).toBe(true);
  });

  it('counts as lost a shortfall either way, a failed or dropped call, a redial; a message the bot holds is not', () => {
    const run = { connected: 10, failed: 0, dropped: 0, chunksShed: 0 };
    const bot = { sessions: 10, heardMs: 200_000, sentMs: 190_000, cutMs: 0 };
    const whole = lossOf(run, 200_500, 190_000, bot);
    expect(whole).toEqual({ callerToBotMs: 500, botToCallerMs: 0, lost: false });
    expect(lossOf(run, 201_500, 190_000, bot).lost).toBe(true);
    expect(lossOf(run, 200_000, 189_500, bot)).toMatchObject({ botToCallerMs: 500, lost: true });
    expect(lossOf({ ...run, failed: 1 }, 200_000, 190_000, bot).lost).toBe(true);
    expect(lossOf({ ...run, dropped: 1 }, 200_000, 190_000, bot).lost).toBe(true);
    expect(lossOf(run, 200_000, 190_000, { ...bot, sessions: 11 }).lost).toBe(true);
    expect(
      standInAudio([
        {
          input: [{ rate: 16000, samples: 16000 }],
          replies: [
            { sent_ms: 300, status: 'interrupted' },
            { sent_ms: 900, status: 'completed' },
            { sent_ms: 100, status: 'in_progress', planned_ms: 400, started_at_ms: 2600 },
          ],
        },
        {
          input: [{ rate: 24000, samples: 12000 }],
          responses: [
            { sent_ms: 40, status: 'cancelled' },
            { sent_ms: 250, status: 'completed' },
          ],
        },
      ]),
    ).toEqual({
      sessions: 2,
      heardMs: 1500,
      sentMs: 1250,
      cutMs: 340,
      // The reply still going out at hang-up: 300 ms of it never sent, begun 2.6 s into its call.
      unfinished: { replies: 1, unsentMs: 300, latestStartMs: 2600 },
    });
    // With every reply completed or cut, no `unfinished`.
    expect(standInAudio([{ replies: [{ sent_ms: 900, status: 'completed' }] }])).not.toHaveProperty(
      'unfinished',
    );
  });

  it('reads each dialect against the bridge dialect round by round, and over the rounds by sums', () => {
    const run = (target: string, round: number, cpu: number | undefined) => ({
      target,
      calls: 200,
      round,
      cpuMsPerCallSecond: cpu,
    });
    const [r] = ratios(
      [run(BASELINE, 1, 1.0), run('x-agent', 1, 1.2), run(BASELINE, 2, 2.0), run('x-agent', 2, 2.8)],
      1.3,
    );
    expect(r!.rounds.map((x) => x.ratio)).toEqual([1.2, 1.4]);
    expect(r!.ratio).toBeCloseTo(4 / 3, 6);
    expect(r!.met).toBe(false);
    const [none] = ratios([run(BASELINE, 1, 1), run('x-agent', 1, undefined)], 1.3);
    expect(none).toMatchObject({ ratio: undefined, met: undefined, rounds: [] });
  });

  it('reads how busy the load core was from /proc/stat, every process on it counted', () => {
    const stat = (cpu1: string) =>
      `cpu  10 0 10 10 0 0 0 0 0 0\ncpu0 5 0 5 90 0 0 0 0 0 0\ncpu1 ${cpu1}\nintr 1 2 3\n`;
    // user nice system idle iowait irq softirq steal guest guest_nice
    const a = coreTimes(stat('100 0 50 800 50 0 0 0 40 0'), 1);
    expect(a).toEqual({ busy: 150, total: 1000 });
    const b = coreTimes(stat('190 0 80 860 60 0 10 0 70 0'), 1);
    expect(busyPct(a, b)).toBe(65);
    expect(() => coreTimes(stat('1 2 3 4 5 6 7 8 9 10'), 3)).toThrow(/no line for cpu3/);
  });

  it('takes its options and names what each takes', () => {
    const a = parseBotDialectsArgs([], 2, ['openai-realtime', 'deepgram-agent']);
    expect(a).toMatchObject({ ladder: [200], seconds: 20, rounds: 2, codec: 'pcmu', pin: undefined });
    expect(
      parseBotDialectsArgs(['--pin', '--dialects', 'deepgram-agent'], 2, ['deepgram-agent']),
    ).toMatchObject({
      targets: [BASELINE, 'deepgram-agent'],
      pin: { server: 1, load: 0 },
    });
    expect(() => parseBotDialectsArgs(['--dialects', 'twilio'], 2, ['deepgram-agent'])).toThrow(
      /--dialects takes bot dialects with a stand-in: deepgram-agent, got "twilio"/,
    );
    expect(() => parseBotDialectsArgs(['--codec', 'opus'], 2)).toThrow(/--codec takes pcmu or slin/);
    expect(() => parseBotDialectsArgs(['--seconds', '2'], 2)).toThrow(/--seconds takes whole numbers from 5/);
    expect(() => parseBotDialectsArgs(['--ladder', '20,x'], 2)).toThrow(/--ladder takes whole numbers/);
    expect(() => parseBotDialectsArgs(['--pin'], 1)).toThrow(/--pin needs two cores/);
  });
});
