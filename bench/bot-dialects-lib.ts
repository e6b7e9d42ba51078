/**
 * The parts of bench/bot-dialects.ts that are plain functions, apart from the run so they can be tested:
 * which bot dialects it measures (every registered one with a stand-in, read from src/dialects/ and
 * src/emulator/stand-ins.ts, so a dialect that lands with its stand-in joins with no edit here), the
 * bridge's environment for a stand-in's bot, the stand-in's command line, the calls' audio, what each
 * side's audio adds up to, and the CPU ratios against the `bridge` dialect in the same run.
 */
import { parseArgs } from 'node:util';
import { generateTone } from '../src/audio/tone.js';
import { BOTS, type BotRegistry } from '../src/dialects/index.js';
import { MAX_REPLY_MS } from '../src/emulator/s2s/voice.js';
import { STAND_INS, type StandIn } from '../src/emulator/stand-ins.js';
import { type PinCpus, parsePinCpus } from '../src/load/pin.js';
import { rampSecondsFor } from './capacity-lib.js';

/** The dialect every other is measured against: our own protocol, toward an echo bot (bench/bot-echo.mjs). */
export const BASELINE = 'bridge';

/** Every registered bot dialect with a stand-in, in the registry's order. */
export function standInDialects(
  registry: BotRegistry = BOTS,
  standIns: Readonly<Record<string, StandIn | undefined>> = STAND_INS,
): string[] {
  return registry.dialects.map((d) => d.name).filter((n) => n !== BASELINE && standIns[n] !== undefined);
}

export interface BotDialectsArgs {
  /** `bridge` first, then the dialects asked for (all with a stand-in unless --dialects names some). */
  readonly targets: string[];
  /** Concurrent calls of each rung. */
  readonly ladder: number[];
  readonly seconds: number;
  readonly rounds: number;
  /** The callers' codec: µ-law (as most telephone calls) or PCM16, both at 8 kHz. */
  readonly codec: 'pcmu' | 'slin';
  readonly pin: PinCpus | undefined;
  readonly json: string | undefined;
}

function wholes(option: string, raw: string, min: number, max: number): number[] {
  const nums = raw.split(',').map((s) => (/^\s*\d+\s*$/.test(s) ? Number(s) : Number.NaN));
  if (nums.some((n) => !Number.isSafeInteger(n) || n < min || n > max))
    throw new Error(
      `--${option} takes whole numbers from ${min} to ${max}, comma-separated, got ${JSON.stringify(raw)}`,
    );
  return nums;
}

function one(option: string, raw: string, min: number, max: number): number {
  const nums = wholes(option, raw, min, max);
  if (nums.length !== 1)
    throw new Error(`--${option} takes one whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return nums[0]!;
}

/** The longest load: a stand-in's one reply lasts it and the ramp (MAX_REPLY_MS; callPlan). */
const MAX_SECONDS = MAX_REPLY_MS / 1000 - 60;
/** The shortest: the CPU window starts 2 s after the ramp (callPlan) and needs a few samples a second apart. */
const MIN_SECONDS = 5;

export function parseBotDialectsArgs(
  args: string[],
  cpuCount: number,
  available: readonly string[] = standInDialects(),
): BotDialectsArgs {
  const { values } = parseArgs({
    args,
    options: {
      dialects: { type: 'string' },
      ladder: { type: 'string', default: '200' },
      seconds: { type: 'string', default: '20' },
      rounds: { type: 'string', default: '2' },
      codec: { type: 'string', default: 'pcmu' },
      pin: { type: 'boolean', default: false },
      'pin-cpus': { type: 'string' },
      json: { type: 'string' },
    },
  });
  const asked = values.dialects === undefined ? [...available] : values.dialects.split(',');
  for (const d of asked)
    if (d !== BASELINE && !available.includes(d))
      throw new Error(
        `--dialects takes bot dialects with a stand-in: ${available.join(', ')}, got ${JSON.stringify(d)}`,
      );
  if (values.codec !== 'pcmu' && values.codec !== 'slin')
    throw new Error(`--codec takes pcmu or slin, got ${JSON.stringify(values.codec)}`);
  if (values['pin-cpus'] !== undefined && !values.pin)
    throw new Error('--pin-cpus sets the cores of --pin: give --pin too');
  if (values.pin && cpuCount < 2) throw new Error(`--pin needs two cores, this machine has ${cpuCount}`);
  return {
    targets: [BASELINE, ...new Set(asked.filter((d) => d !== BASELINE))],
    ladder: wholes('ladder', values.ladder, 1, 5000),
    seconds: one('seconds', values.seconds, MIN_SECONDS, MAX_SECONDS),
    rounds: one('rounds', values.rounds, 1, 20),
    codec: values.codec,
    pin: values.pin ? parsePinCpus(values['pin-cpus'] ?? '1,0', cpuCount) : undefined,
    json: values.json,
  };
}

/**
 * A `bot` object of a `PUT /v1/media-stream` body (REST names) as the bridge's environment: `dialect`
 * and `url` as BOT_DIALECT and BOT_URL, every other field as its declared twin (JSON where the twin
 * takes JSON). Throws naming a field the registry does not know or that has no twin.
 */
export function botEnv(
  bot: Readonly<Record<string, unknown>>,
  registry: BotRegistry = BOTS,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [rest, value] of Object.entries(bot)) {
    if (rest === 'dialect' || rest === 'url') {
      env[rest === 'dialect' ? 'BOT_DIALECT' : 'BOT_URL'] = String(value);
      continue;
    }
    const field = registry.fields.find((f) => f.rest === rest);
    if (field?.env === undefined)
      throw new Error(
        `bot.${rest} ${field === undefined ? 'is no bot field' : 'has no environment twin'}: the bench sets the bridge's bot through its environment`,
      );
    env[field.env.name] =
      field.envValue === 'json' || typeof value !== 'string' ? JSON.stringify(value) : value;
  }
  return env;
}

/**
 * What every target's bridge runs with beside the bench:capacity defaults: at most 4 s of bot audio held
 * for a caller (OUTBOUND_BUFFER_MS, 60 s by default). The stand-ins keep LEAD_MS ahead; Ultravox's keeps
 * the client buffer the bridge asks for, half of OUTBOUND_BUFFER_MS: 2 s here (MAX_LEAD_S), where at the
 * default 30 s a 21 s reply would all come in its first second, before the CPU window. At 1 s a bot's
 * catch-up after a stall on a loaded machine overran it and audio was shed (the loss check caught it).
 */
export const BRIDGE_ENV: Readonly<Record<string, string>> = { OUTBOUND_BUFFER_MS: '4000' };
/** The most any stand-in runs ahead of real time here: Ultravox's client buffer, half of BRIDGE_ENV's. */
export const MAX_LEAD_S = 2;

/**
 * The bridge's environment for a stand-in's bot: BRIDGE_ENV, BOT_URL emptied (bench:capacity's bridge
 * starts with `builtin:echo` there, which a dialect that takes no URL refuses), then the bot's own.
 */
export function standInBridgeEnv(bot: Readonly<Record<string, unknown>>): Record<string, string> {
  return { ...BRIDGE_ENV, BOT_URL: '', ...botEnv(bot) };
}

/**
 * The timeline of a rung's calls. Calls start over `rampSeconds`, send until `seconds` after the ramp and
 * hang up `drainMs` later. A stand-in answers each caller's turn (TURN_MS, then its VAD's silence, about
 * 1 s from the call's start) with one reply of `replyMs`: it outlasts the load for the first call and
 * ends within the drain for the last, so every reply is heard whole and no bot is silent while the CPU
 * is read. The CPU window starts `settleSeconds` after the ramp, once every reply is under way, and ends
 * with the load (`trailSeconds` 0), while every caller still sends: every bot sends and receives audio at
 * real time throughout it, the echo bot and the stand-ins alike.
 */
export function callPlan(calls: number, seconds: number) {
  const rampSeconds = rampSecondsFor(calls);
  return {
    rampSeconds,
    // A reply sent MAX_LEAD_S ahead stops sending that much before it ends: it still outlasts the window.
    replyMs: (rampSeconds + seconds + 0.5 + MAX_LEAD_S) * 1000,
    drainMs: (rampSeconds + 3 + MAX_LEAD_S) * 1000,
    /** The caller's audio, long enough never to loop. */
    audioSeconds: rampSeconds + seconds + 1,
    window: { settleSeconds: 2, trailSeconds: 0 },
  };
}

/**
 * How far ahead of real time a stand-in keeps its reply: a vendor's server sends ahead and the bridge
 * paces. Sent just in time instead, the last part-frame of each 100 ms message waits for the next one and
 * the caller hears gaps of about 60 ms (inter-arrival p99, measured here); 200 ms is a small playback
 * buffer.
 */
export const LEAD_MS = 200;

/**
 * The stand-in's command line beside its dialect and port: its log quiet, replies of `replyMs`, and where it paces its replies (`--output-rate-factor`, its
 * default sending four times real time as a vendor's speech does) its audio at real time, LEAD_MS ahead
 * where it takes `--lead-ms`. Ultravox's stand-in paces by the client buffer the bridge asks for.
 */
export function standInArgs(standIn: StandIn, replyMs: number): string[] {
  const paced = 'output-rate-factor' in standIn.flags;
  return [
    '--log-level',
    'warn',
    '--reply-ms',
    String(Math.min(MAX_REPLY_MS, Math.round(replyMs))),
    ...(paced ? ['--output-rate-factor', '1'] : []),
    ...(paced && 'lead-ms' in standIn.flags ? ['--lead-ms', String(LEAD_MS)] : []),
  ];
}

/** How long the caller's one turn lasts: long enough for every stand-in's VAD, short beside the call. */
export const TURN_MS = 300;
const TURN_HZ = 700;

/**
 * The caller's audio at `rate`: a 300 ms tone (-10 dBFS, speech to every stand-in's VAD) then digital
 * silence (below every VAD), `seconds` long in all so the load generator never loops it. The stand-ins
 * take the tone as a turn and answer with one reply that lasts the call; the echo bot sends it all back.
 */
export function callerAudio(rate: number, seconds: number): Int16Array {
  const audio = new Int16Array(Math.ceil(rate * seconds));
  audio.set(generateTone(TURN_HZ, rate, Math.round((rate * TURN_MS) / 1000), 0.3));
  return audio;
}

/** A stand-in's session summary, as far as the bench reads it (StandIn.sessionsPath). */
export interface SessionSummary {
  readonly input?: readonly { readonly rate: number; readonly samples: number }[];
  readonly replies?: readonly Sent[];
  readonly responses?: readonly Sent[];
}

/** A reply's record: how much went out, and whether the caller cut it (`interrupted`, Realtime's `cancelled`). */
interface Sent {
  readonly sent_ms: number;
  readonly status?: string;
  readonly planned_ms?: number;
  /** From the session's open, ms. */
  readonly started_at_ms?: number;
}

/**
 * What a bot heard and sent over a run: its sessions, and ms of audio each way. `sentMs` counts the
 * replies the caller is owed whole; `cutMs` what went out of replies the caller cut (a greeting the
 * caller's turn interrupted: Ultravox's agent speaks first), which the bridge rightly drops unplayed.
 */
export interface BotAudio {
  readonly sessions: number;
  readonly heardMs: number;
  readonly sentMs: number;
  readonly cutMs: number;
  /**
   * Replies still going out when their session closed (neither completed nor cut), with what of them
   * was never sent and the latest start among them (ms from the session's open): a reply that began
   * late, its caller hanging up before its end, is what these say.
   */
  readonly unfinished?: {
    readonly replies: number;
    readonly unsentMs: number;
    readonly latestStartMs: number;
  };
}

export function standInAudio(sessions: readonly SessionSummary[]): BotAudio {
  let heardMs = 0;
  let sentMs = 0;
  let cutMs = 0;
  const unfinished = { replies: 0, unsentMs: 0, latestStartMs: 0 };
  for (const s of sessions) {
    for (const seg of s.input ?? []) heardMs += (seg.samples * 1000) / seg.rate;
    for (const r of s.replies ?? s.responses ?? []) {
      if (r.status === 'interrupted' || r.status === 'cancelled') cutMs += r.sent_ms;
      else sentMs += r.sent_ms;
      if (r.status === 'in_progress' || r.status === 'stopped') {
        unfinished.replies++;
        unfinished.unsentMs += Math.max(0, (r.planned_ms ?? r.sent_ms) - r.sent_ms);
        unfinished.latestStartMs = Math.max(unfinished.latestStartMs, r.started_at_ms ?? 0);
      }
    }
  }
  return {
    sessions: sessions.length,
    heardMs: Math.round(heardMs),
    sentMs: Math.round(sentMs),
    cutMs: Math.round(cutMs),
    ...(unfinished.replies > 0 && { unfinished }),
  };
}

/** The echo bot's /stats (bench/bot-echo.mjs): PCM16 at `rate` each way. */
export function echoAudio(
  stats: { connections: number; bytesIn: number; bytesOut: number },
  rate: number,
): BotAudio {
  const ms = (bytes: number) => Math.round((bytes / 2 / rate) * 1000);
  return { sessions: stats.connections, heardMs: ms(stats.bytesIn), sentMs: ms(stats.bytesOut), cutMs: 0 };
}

/**
 * What may go missing per call without anything being lost: the caller's last audio that a dialect still
 * holds for its next message when the caller stops (50-100 ms a message). The bot's audio has no
 * allowance: every reply ends before its caller hangs up (callPlan), so the caller must get all of it.
 */
export const ALLOWANCE_MS_PER_CALL = 100;

export interface Loss {
  /** Caller audio sent that the bot never heard, and bot audio sent that the caller never got, ms. */
  readonly callerToBotMs: number;
  readonly botToCallerMs: number;
  /** Either beyond the allowance, or a call failed, dropped or redialled (more bot sessions than calls). */
  readonly lost: boolean;
}

export function lossOf(
  r: { connected: number; failed: number; dropped: number; chunksShed: number },
  callerSentMs: number,
  callerGotMs: number,
  bot: BotAudio,
): Loss {
  const callerToBotMs = Math.max(0, Math.round(callerSentMs - bot.heardMs));
  const botToCallerMs = Math.max(0, Math.round(bot.sentMs - callerGotMs));
  const allowance = ALLOWANCE_MS_PER_CALL * r.connected;
  return {
    callerToBotMs,
    botToCallerMs,
    lost:
      r.failed > 0 ||
      r.dropped > 0 ||
      r.chunksShed > 0 ||
      bot.sessions !== r.connected ||
      callerToBotMs > allowance ||
      // One frame a call: a reply's last part-frame, which the bridge pads or the call ends on.
      botToCallerMs > 20 * r.connected,
  };
}

/** One target's run at one rung of one round, as far as the ratios read it. */
export interface RatioInput {
  readonly target: string;
  readonly calls: number;
  readonly round: number;
  readonly cpuMsPerCallSecond: number | undefined;
}

export interface Ratio {
  readonly target: string;
  readonly calls: number;
  /** Each round's CPU per call-second against the baseline's in the same round. */
  readonly rounds: { round: number; cpu: number; baseline: number; ratio: number }[];
  /** The target's CPU summed over the rounds against the baseline's; undefined without a reading. */
  readonly ratio: number | undefined;
}

/**
 * Each target's CPU per call-second against the baseline's, rung by rung: round by round (the two ran
 * in the same minutes) and over all rounds (sums, so one noisy round weighs as much as its CPU).
 */
export function ratios(runs: readonly RatioInput[], goal: number): (Ratio & { met: boolean | undefined })[] {
  const out: (Ratio & { met: boolean | undefined })[] = [];
  const targets = [...new Set(runs.map((r) => r.target))].filter((t) => t !== BASELINE);
  const ladder = [...new Set(runs.map((r) => r.calls))];
  for (const calls of ladder)
    for (const target of targets) {
      const rounds: Ratio['rounds'] = [];
      for (const r of runs.filter((x) => x.target === target && x.calls === calls)) {
        const base = runs.find((x) => x.target === BASELINE && x.calls === calls && x.round === r.round);
        const cpu = r.cpuMsPerCallSecond;
        const baseline = base?.cpuMsPerCallSecond;
        if (cpu === undefined || baseline === undefined || !(baseline > 0)) continue;
        rounds.push({ round: r.round, cpu, baseline, ratio: cpu / baseline });
      }
      const sum = (k: 'cpu' | 'baseline') => rounds.reduce((t, r) => t + r[k], 0);
      const ratio = rounds.length > 0 ? sum('cpu') / sum('baseline') : undefined;
      out.push({ target, calls, rounds, ratio, met: ratio === undefined ? undefined : ratio <= goal });
    }
  return out;
}

/** One core's line of /proc/stat: jiffies busy (all but idle and iowait) and in all. */
export function coreTimes(procStat: string, cpu: number): { busy: number; total: number } {
  const line = procStat.split('\n').find((l) => l.startsWith(`cpu${cpu} `));
  if (line === undefined) throw new Error(`/proc/stat has no line for cpu${cpu}`);
  const n = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - n[3]! - n[4]!, total };
}

/** How busy a core was between two readings of coreTimes, in % (every process on it, ours or not). */
export function busyPct(a: { busy: number; total: number }, b: { busy: number; total: number }): number {
  const total = b.total - a.total;
  return total > 0 ? Math.round((1000 * (b.busy - a.busy)) / total) / 10 : 0;
}
