/**
 * One call's tools (src/media/call-tools.ts says where they sit): the tools its bot declares, each call
 * of one by the model checked, run and answered to its own id, hold audio while they run, the idle
 * policy, and `end_call`'s hang-up once the goodbye has played.
 *
 * A call of a tool, in order: the tool found by name (else `not_found`); the arguments parsed when they
 * come as JSON text and checked against the tool's schema (else `invalid_arguments`, and a webhook's URL
 * is not called); the tool run with its bound (a built-in's own, a webhook's `timeout_ms`); its output,
 * or an `{error, message}` for every failure, answered to the model; the call counted
 * (`voicebridge_tool_calls_total{tool,outcome}`), logged (name, id, outcome, duration: never the
 * arguments or the output, which may hold a customer's data) and told to the tenant's live events
 * (`tool_call`). Calls in flight when the session ends are cancelled (their webhook requests aborted)
 * and answered no more.
 *
 * `end_call`: a mark goes behind the bot's audio sent so far; when the provider reports it played (the
 * session hands every played mark to the bot leg, and this leg takes the tools' own out), the call
 * hangs up the way its provider dialect does. Should the report never come, the hang-up goes
 * END_CALL_GRACE_MS after the audio would have played.
 */
import type { Agent } from 'undici';
import type { Clock, ClockTimer } from '../clock.js';
import type { BotSettings } from '../config/bot-settings.js';
import { tenantDialledProblem, wavPathInside } from '../config/bot-url.js';
import type { BridgeContext } from '../context.js';
import type { BotLeg, BotTools, CallerPort, ToolOutput, ToolRequest, ToolSpec } from '../media/bot/types.js';
import { loadWav } from '../media/bot/wav.js';
import type { CallTools, CallToolsSetup } from '../media/call-tools.js';
import { BUILTINS, type Builtin, errorOutput } from './builtins.js';
import { builtinHold, encodeHold, HoldAudio } from './hold.js';
import { IdleWatch } from './idle.js';
import { type LineWatcher, WatchedLeg, WatchedPort } from './lines.js';
import { argumentsProblem } from './schema.js';
import { type WebhookTool, webhookTimeoutMs } from './settings.js';
import { callWebhook } from './webhook.js';

/** The outcomes a call of a tool is counted and reported by (CONTRACT §10). */
export type ToolOutcome = 'ok' | 'error' | 'timeout' | 'invalid_arguments' | 'cancelled';

/** The prefix of the marks the tools place (never handed to the bot dialect). */
export const TOOL_MARK_PREFIX = 'vbt:';
/** How long past the audio's end a hang-up waits for its mark's report before it goes anyway. */
export const END_CALL_GRACE_MS = 2_000;

export interface ToolsDeps {
  readonly ctx: BridgeContext;
  readonly clock: Clock;
  /** The HTTP agent of every webhook tool of the bridge. */
  readonly agent: Agent;
}

type Tool = { readonly builtin: Builtin } | { readonly webhook: WebhookTool };

interface Flight {
  readonly name: string;
  readonly startedAt: number;
  readonly abort: AbortController;
}

/** The call's tools, or undefined when its bot has no tools and no idle policy. */
export function openCallTools(deps: ToolsDeps, setup: CallToolsSetup): CallTools | undefined {
  const { tools, idle } = setup.settings;
  if ((tools === undefined || tools.length === 0) && idle === undefined) return undefined;
  return new CallToolRunner(deps, setup);
}

/** The output's outcome: its error code read, where it has one. */
export function outcomeOf(output: ToolOutput): ToolOutcome {
  switch (output.error) {
    case undefined:
      return 'ok';
    case 'invalid_arguments':
      return 'invalid_arguments';
    case 'upstream_timeout':
      return 'timeout';
    default:
      return 'error';
  }
}

const holdCache = new Map<string, Uint8Array>();

class CallToolRunner implements CallTools, LineWatcher {
  readonly port: CallerPort;
  readonly bot: BotTools | undefined;
  readonly #deps: ToolsDeps;
  readonly #setup: CallToolsSetup;
  readonly #tools = new Map<string, Tool>();
  readonly #flights = new Map<string, Flight>();
  readonly #hold: HoldAudio | undefined;
  readonly #idle: IdleWatch | undefined;
  readonly #bytesPerMs: number;
  /** The bot's audio sent so far plays until then (on the clock). */
  #botUntil = 0;
  #inner: BotLeg | undefined;
  readonly #endMarks = new Map<string, ClockTimer>();
  #marks = 0;
  #ending = false;
  #ended = false;

  constructor(deps: ToolsDeps, setup: CallToolsSetup) {
    this.#deps = deps;
    this.#setup = setup;
    const { format, settings } = setup;
    this.#bytesPerMs = (format.rate / 1000) * (format.codec === 'slin' ? 2 : 1);
    const specs: ToolSpec[] = [];
    for (const item of settings.tools ?? []) {
      const tool: Tool = typeof item === 'string' ? { builtin: BUILTINS[item] } : { webhook: item };
      const name = typeof item === 'string' ? item : item.name;
      this.#tools.set(name, tool);
      specs.push(
        'builtin' in tool
          ? tool.builtin.spec
          : { name, description: tool.webhook.description, parameters: tool.webhook.parameters },
      );
    }
    this.port = new WatchedPort(this, setup.port);
    this.bot =
      specs.length === 0
        ? undefined
        : {
            specs,
            call: (request, answer) => this.#call(request, answer),
            cancel: (callId) => this.#cancel(callId),
          };
    if (specs.length > 0 && settings.holdAudio !== 'none') {
      this.#hold = new HoldAudio({
        port: setup.port,
        loop: setup.loop,
        clock: deps.clock,
        format,
        afterMs: settings.toolHoldMs ?? 1000,
      });
      this.#loadHold(settings);
    }
    const idle = settings.idle;
    if (idle !== undefined) {
      this.#idle = new IdleWatch({
        clock: deps.clock,
        policy: idle,
        codec: format.codec,
        reprompt: (ms) => this.#reprompt(ms),
        hangup: (ms) => this.#idleHangup(ms),
      });
    }
  }

  attach(bot: BotLeg): BotLeg {
    this.#inner = bot;
    return new WatchedLeg(this, bot);
  }

  // The bot -> caller line (WatchedPort).

  botAudio(bytes: number): void {
    const now = this.#deps.clock.now();
    this.#botUntil = Math.max(now, this.#botUntil) + bytes / this.#bytesPerMs;
    this.#hold?.botAudio(this.#botUntil);
    this.#idle?.botAudio(this.#botUntil);
  }

  botCleared(): void {
    this.#botUntil = this.#deps.clock.now();
    this.#hold?.botCleared();
  }

  // The caller -> bot line (WatchedLeg).

  callerAudio(pcm: Uint8Array): void {
    this.#idle?.callerAudio(pcm);
  }

  callerDigit(): void {
    this.#idle?.callerDigit();
  }

  ownMark(name: string): boolean {
    return name.startsWith(TOOL_MARK_PREFIX);
  }

  /** A mark of the tools' own was played (or cleared: the audio before it will not play either). */
  markPlayed(name: string): void {
    const timer = this.#endMarks.get(name);
    if (timer === undefined) return;
    this.#deps.clock.clearTimeout(timer);
    this.#endMarks.delete(name);
    this.#hangUp();
  }

  /** The session is over: calls in flight are cancelled, timers stopped. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const callId of [...this.#flights.keys()]) this.#cancel(callId);
    this.#hold?.end();
    this.#idle?.end();
    for (const t of this.#endMarks.values()) this.#deps.clock.clearTimeout(t);
    this.#endMarks.clear();
  }

  // Calls of tools.

  #call(request: ToolRequest, answer: (output: ToolOutput, respond: boolean) => void): void {
    const { callId } = request;
    if (this.#ended || this.#flights.has(callId)) return;
    const name = request.name.slice(0, 64);
    const startedAt = this.#deps.clock.now();
    const tool = this.#tools.get(name);
    // Answered later, never from inside the dialect's own call.
    const refuse = (output: ToolOutput) =>
      queueMicrotask(() => {
        if (this.#ended) return;
        this.#record(
          tool === undefined ? undefined : name,
          name,
          callId,
          startedAt,
          outcomeOf(output),
          output,
        );
        answer(output, true);
      });
    if (tool === undefined) {
      refuse({
        error: 'not_found',
        message: `no tool "${name}" on this call; its tools: ${[...this.#tools.keys()].join(', ')}`,
      });
      return;
    }
    let args = request.arguments;
    if (typeof args === 'string') {
      try {
        args = args.trim() === '' ? {} : JSON.parse(args);
      } catch {
        refuse({ error: 'invalid_arguments', message: 'the arguments are not JSON' });
        return;
      }
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      refuse({ error: 'invalid_arguments', message: 'the arguments must be a JSON object' });
      return;
    }
    const problem =
      'builtin' in tool ? tool.builtin.check(args) : argumentsProblem(tool.webhook.parameters, args);
    if (problem !== undefined) {
      refuse({ error: 'invalid_arguments', message: problem });
      return;
    }
    const flight: Flight = { name, startedAt, abort: new AbortController() };
    this.#flights.set(callId, flight);
    this.#hold?.toolStarted();
    this.#idle?.toolStarted();
    const respond = 'builtin' in tool ? tool.builtin.respond : true;
    this.#run(tool, callId, args as Record<string, unknown>, flight.abort.signal).then((output) => {
      if (this.#flights.get(callId) !== flight) return; // cancelled meanwhile
      this.#settle(callId);
      this.#record(name, name, callId, startedAt, outcomeOf(output), output);
      if (!this.#ended) answer(output, respond);
    });
  }

  /** Runs a tool; resolves with its output or an `{error, message}` output, never rejects. */
  async #run(
    tool: Tool,
    callId: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ToolOutput> {
    const { ctx } = this.#deps;
    const { info, log } = this.#setup;
    if ('webhook' in tool) {
      const w = tool.webhook;
      if (this.#setup.own) {
        // The operator may have narrowed BOT_URL_ALLOWED_HOSTS since the tenant stored its bot.
        const why = tenantDialledProblem(w.url, ctx.config);
        if (why !== undefined)
          return {
            error: 'upstream_unavailable',
            message: "the tool's URL is refused by this bridge's configuration (BOT_URL_ALLOWED_HOSTS)",
          };
      }
      return callWebhook(this.#deps.agent, {
        url: w.url,
        timeoutMs: webhookTimeoutMs(w),
        secret: await this.#toolSecret(),
        body: {
          session_id: info.session_id,
          tenant: info.tenant,
          tool: w.name,
          call_id: callId,
          arguments: args,
        },
        signal,
      });
    }
    const b = tool.builtin;
    let timer: ClockTimer | undefined;
    const bound = new Promise<ToolOutput>((resolve) => {
      timer = this.#deps.clock.setTimeout(
        () =>
          resolve({
            error: 'upstream_timeout',
            message: `${b.spec.name} had no answer within ${b.maxMs} ms`,
          }),
        b.maxMs,
      );
      timer.unref();
    });
    const run = b
      .run(args, {
        ctx,
        info,
        carriesDigits: this.#setup.carriesDigits,
        port: this.#setup.port,
        log,
        endCall: () => this.#endCall(),
      })
      .catch((err: unknown) => errorOutput(err, log, b.spec.name));
    try {
      return await Promise.race([run, bound]);
    } finally {
      if (timer !== undefined) this.#deps.clock.clearTimeout(timer);
    }
  }

  /** The tenant's `tool_secret`; the environment's BOT_TOOL_SECRET for its own bot and tenant default. */
  async #toolSecret(): Promise<string | undefined> {
    const { ctx } = this.#deps;
    const tenant = this.#setup.info.tenant;
    const own = await ctx.tenants.getToolSecret(tenant).catch(() => undefined);
    if (own !== undefined) return own;
    return !this.#setup.own || tenant === 'default' ? ctx.config.botToolSecret : undefined;
  }

  #cancel(callId: string): void {
    const flight = this.#flights.get(callId);
    if (flight === undefined) return;
    this.#settle(callId);
    flight.abort.abort();
    this.#record(flight.name, flight.name, callId, flight.startedAt, 'cancelled', undefined);
  }

  #settle(callId: string): void {
    this.#flights.delete(callId);
    this.#hold?.toolFinished();
    this.#idle?.toolFinished();
  }

  /** Counts, logs and reports one call (the metric's `tool` is `unknown` for a name the call has not). */
  #record(
    known: string | undefined,
    name: string,
    callId: string,
    startedAt: number,
    outcome: ToolOutcome,
    output: ToolOutput | undefined,
  ): void {
    const { ctx, clock } = this.#deps;
    const { info, log } = this.#setup;
    const duration_ms = Math.round(clock.now() - startedAt);
    ctx.metrics.toolCalls.labels(known ?? 'unknown', outcome).inc();
    const code = typeof output?.error === 'string' ? output.error : undefined;
    log.info({ tool: name, call_id: callId.slice(0, 128), outcome, duration_ms, code }, 'tool call');
    if (ctx.callEvents.listening(info.tenant))
      ctx.callEvents.emit(info.tenant, 'tool_call', {
        session_id: info.session_id,
        name,
        call_id: callId,
        duration_ms,
        outcome,
      });
  }

  // end_call, the idle policy, hold audio.

  #endCall(): void {
    if (this.#ending || this.#ended) return;
    this.#ending = true;
    this.#idle?.end();
    this.#hold?.end();
    const name = `${TOOL_MARK_PREFIX}end:${++this.#marks}`;
    const { clock } = this.#deps;
    const waitMs = Math.max(0, this.#botUntil - clock.now()) + END_CALL_GRACE_MS;
    const timer = clock.setTimeout(() => {
      if (!this.#endMarks.delete(name)) return;
      this.#setup.log.warn(
        { wait_ms: Math.round(waitMs) },
        'end_call: no report that the goodbye played; hanging up',
      );
      this.#hangUp();
    }, waitMs);
    timer.unref();
    this.#endMarks.set(name, timer);
    this.#setup.port.mark(name);
  }

  #hangUp(): void {
    if (this.#ended) return;
    this.#setup.port.hangup('end_call');
  }

  #reprompt(silentMs: number): void {
    const seconds = Math.round(silentMs / 1000);
    this.#setup.log.info({ silent_ms: silentMs }, 'idle: the model is asked to speak');
    this.#report('idle', { action: 'reprompt', silent_ms: silentMs });
    this.#inner?.prompt?.(`[silence ${seconds} s]`);
  }

  #idleHangup(silentMs: number): void {
    this.#setup.log.info({ silent_ms: silentMs }, 'idle: the call ends');
    this.#report('idle', { action: 'hangup', silent_ms: silentMs });
    this.#endCall();
  }

  #report(event: string, fields: Record<string, unknown>): void {
    const { ctx } = this.#deps;
    const { info } = this.#setup;
    if (ctx.callEvents.listening(info.tenant))
      ctx.callEvents.emit(info.tenant, event, { ...fields, session_id: info.session_id });
  }

  #loadHold(settings: BotSettings): void {
    const hold = this.#hold!;
    const { format, log } = this.#setup;
    const spec = settings.holdAudio ?? 'builtin:hold';
    if (spec === 'builtin:hold') {
      const key = `${format.codec}:${format.rate}`;
      let source = holdCache.get(key);
      if (source === undefined) {
        source = builtinHold(format);
        holdCache.set(key, source);
      }
      hold.use(source);
      return;
    }
    const path = spec.slice('wav:'.length);
    // A tenant's file only inside BOT_WAV_DIR, checked again now (as a tenant's WAV bot is).
    const file = this.#setup.own ? wavPathInside(path, this.#deps.ctx.config.botWavDir) : path;
    if (file === undefined) {
      log.warn('hold_audio is outside BOT_WAV_DIR now: the call has no hold audio');
      return;
    }
    loadWav(file, format.rate).then(
      (samples) => hold.use(encodeHold(samples, format)),
      (err: unknown) =>
        log.warn(
          { code: (err as NodeJS.ErrnoException).code },
          'hold_audio cannot be played: the call has none',
        ),
    );
  }
}
