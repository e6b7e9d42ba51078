/**
 * The `deepgram-agent` dialect: the bridge is a client of Deepgram's Voice Agent (`/v1/agent/converse`),
 * dialled at session_start with `Authorization: Token <api_key>`.
 *
 *   open:       wait for `Welcome`, then send `Settings`: the tenant's `settings` at the top level, the
 *               audio formats set by the bridge (`audio.input` and `audio.output`: `mulaw` 8000 when the
 *               caller is µ-law 8 kHz both ways, so the audio passes with no DSP at all; else `linear16`
 *               at the caller's input and output rates; `container: "none"`), and `instructions` as the
 *               `prompt` of `agent.think` (of each entry, where it lists fallbacks). Nothing else goes
 *               before `SettingsApplied`: the caller's audio and digits wait, in order and bounded
 *   caller:     binary frames, as the leg gets them
 *   agent:      binary frames to the caller, paced by the outbound writer
 *   barge-in:   on `UserStartedSpeaking`, while any of the agent's audio may still be playing, the
 *               caller's playback is cleared (bridge queue, DSP, provider `clear`). Audio of the cut turn
 *               that the server had still in flight is dropped: from `UserStartedSpeaking` until the
 *               turn's end (`AgentAudioDone`), the next turn's start (`AgentStartedSpeaking`) or the
 *               caller's words (`ConversationText` of the user, which the server sends only once the cut
 *               turn is over), whichever comes first
 *   keep-alive: `KeepAlive` once no caller audio went for KEEPALIVE_MS, and every KEEPALIVE_MS while
 *               none goes (Deepgram closes a socket that sends nothing for about 10 s)
 *   DTMF:       a user text `[DTMF 5]` as `InjectUserMessage`, which Deepgram always answers as if the
 *               caller had said it. BOT_DTMF / bot.dtmf: `respond`, each digit at once; `text` (default),
 *               a run of digits (none for DIGIT_RUN_MS) as one message, so the agent answers the entry
 *               once and not each key; `ignore`, dropped
 *   errors:     `Error` and `Warning` logged with their code and description; the call goes on
 *   hang-up:    a close with 1000 once the session is set up is the agent ending the call: its audio
 *               already sent plays out first. A close before `SettingsApplied`, or no `SettingsApplied`
 *               within BOT_CONNECT_TIMEOUT_MS, is a failed dial, counted toward BOT_RETRIES
 *   tools:      the call's tools go in `agent.think.functions` (of each entry, where it lists fallbacks)
 *               after the tenant's own functions of `settings` (one of the same name is replaced), each
 *               with `defer_until_eot: true`, so no tool acts on a turn the caller then went on with. A
 *               client-side `FunctionCallRequest` runs each of its functions through the call's tools and
 *               is answered with a `FunctionCallResponse` {id, name, content: the output as JSON text}; a
 *               `FunctionCallCancelled` cancels the calls it names (no answer goes), as does a new socket
 *               for the calls of the one before it. Without tools, a client-side call is answered
 *               `not_found`, so the agent is not left waiting; server-side ones are Deepgram's to run
 *   reprompt:   `InjectUserMessage` with the idle policy's text, which the agent answers
 *
 * Whether audio may still be playing: the dialect places a mark (`dg:<n>`) at each `AgentAudioDone`; once
 * the latest one is reported (played, or dropped by a clear) with no audio since, nothing is playing.
 */
import type { agent as Deepgram, ThinkSettingsV1 } from '@deepgram/sdk';
import { type Clock, type ClockTimer, systemClock } from '../../clock.js';
import { deepgramAgent } from '../../dialects/bot/deepgram-agent.js';
import type { DtmfMode } from '../../dialects/bot/speech.js';
import { BridgeError } from '../../errors.js';
import type { Format } from '../../pipeline/types.js';
import type { SessionFormat } from '../format.js';
import type { BotDialect } from './dialect.js';
import { DigitRuns } from './digit-runs.js';
import type { BotCall, BotFormats, BotTools, CallerPort, ToolOutput } from './types.js';
import { WsLink, type WsLinkOptions } from './ws-link.js';

/** No caller audio for this long: a `KeepAlive` goes, and again as long as none goes. */
export const KEEPALIVE_MS = 5_000;
/**
 * What waits for `SettingsApplied`, in frames and messages: about 2 s of 20 ms frames (as WsLink holds
 * for a first dial), the oldest dropped past it.
 */
const MAX_HELD = 100;

const MULAW_8K: Format = { codec: 'pcmu', rate: 8000 };

/** The server messages the dialect knows; any other type is skipped and counted. */
const SERVER_MESSAGES = new Set([
  'Welcome',
  'SettingsApplied',
  'ConversationText',
  'UserStartedSpeaking',
  'AgentThinking',
  'AgentStartedSpeaking',
  'AgentAudioDone',
  'FunctionCallRequest',
  'FunctionCallResponse',
  'FunctionCallCancelled',
  'PromptUpdated',
  'SpeakUpdated',
  'ThinkUpdated',
  'ListenUpdated',
  'InjectionRefused',
  'LatencyReport',
  'History',
  'Error',
  'Warning',
]);

/**
 * µ-law 8 kHz both ways passes as it is; anything else is linear16 at the caller's own rate each way,
 * so the DSP only decodes and encodes, and resamples nothing.
 */
export function deepgramFormats(caller: SessionFormat): BotFormats {
  if (caller.codec === 'pcmu' && caller.inputRate === 8000 && caller.outputRate === 8000)
    return { toBot: MULAW_8K, fromBot: MULAW_8K };
  return {
    toBot: { codec: 'slin', rate: caller.inputRate },
    fromBot: { codec: 'slin', rate: caller.outputRate },
  };
}

function wireFormat(f: Format): { encoding: 'mulaw' | 'linear16'; sample_rate: number } {
  return { encoding: f.codec === 'pcmu' ? 'mulaw' : 'linear16', sample_rate: f.rate };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `list` (the tenant's own functions, if any) with `ours` after it, in place of any of the same name. */
function withFunctions(list: unknown, ours: readonly { readonly name: string }[]): unknown[] {
  const names = new Set(ours.map((f) => f.name));
  const theirs = Array.isArray(list) ? list.filter((f) => !(isObject(f) && names.has(f.name as string))) : [];
  return [...theirs, ...ours];
}

export interface DeepgramAgentOptions extends WsLinkOptions {
  readonly formats: BotFormats;
  readonly instructions?: string | undefined;
  /** The tenant's `settings` (frozen: copied before anything is set in it). */
  readonly settings?: Readonly<Record<string, unknown>> | undefined;
  readonly dtmf?: DtmfMode | undefined;
  readonly tools?: BotTools | undefined;
}

/** A message or an audio frame waiting for `SettingsApplied`. */
type Held = { readonly text: string } | { readonly audio: Uint8Array };

export class DeepgramAgentBot extends WsLink {
  readonly #o: DeepgramAgentOptions;
  readonly #clock: Clock;
  readonly #pcmOut: boolean;
  /** This socket's state: `Welcome` came, `SettingsApplied` came. */
  #welcomed = false;
  #applied = false;
  /** Some socket's settings were applied once: later, audio is not held across a redial. */
  #everApplied = false;
  #held: Held[] = [];
  /** When caller audio (or a `KeepAlive`) last went, on the calls' clock. */
  #lastSentAt = 0;
  #keepAlive: ClockTimer | undefined;
  /** The bound on the handshake: `SettingsApplied` within BOT_CONNECT_TIMEOUT_MS of the socket opening. */
  #handshake: ClockTimer | undefined;
  /** The caller's digits as the model's user text, a run at a time in `text` mode. */
  readonly #digitRuns: DigitRuns;
  /** A turn's audio is being sent: from its first audio or `AgentStartedSpeaking` to `AgentAudioDone`. */
  #sending = false;
  /** Audio of a turn the caller cut is dropped until the turn's boundary (see the header). */
  #dropping = false;
  #droppedBytes = 0;
  /** Audio was passed to the caller that may not have played yet, and any since the latest mark. */
  #unplayed = false;
  #audioSinceMark = false;
  #marks = 0;
  /** Client-side function calls of this socket not yet answered. */
  readonly #pendingCalls = new Set<string>();

  /** A connection is of use once its settings are applied: one closed before counts toward BOT_RETRIES. */
  protected override readonly confirmsOpen = true;

  constructor(call: BotCall, port: CallerPort, o: DeepgramAgentOptions) {
    super(call, port, o);
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
    this.#digitRuns = new DigitRuns(o.dtmf, this.#clock, (text) => this.#inject(text));
    this.#pcmOut = o.formats.fromBot.codec === 'slin';
    this.start();
  }

  audio(data: Uint8Array): void {
    if (!this.#applied) {
      // Only before the first session is set up; during a redial the caller hears silence, and what
      // they say meanwhile is not kept (as WsLink does for every dialect).
      if (!this.#everApplied) this.#hold({ audio: new Uint8Array(data) });
      return;
    }
    this.#lastSentAt = this.#clock.now();
    this.sendAudio(data);
  }

  dtmf(digit: string): void {
    this.#digitRuns.digit(digit);
  }

  /** The latest of our marks reported (played or cleared) with no audio since: nothing of the agent's plays. */
  mark(name: string): void {
    if (name === `dg:${this.#marks}`) this.#unplayed = this.#audioSinceMark;
  }

  /** Asks the agent to speak (the idle policy): a user text, which Deepgram always answers. */
  prompt(text: string): void {
    this.#inject(text);
  }

  protected opened(): void {
    // A new agent session knows nothing of the calls the last one made: they are answered no more.
    for (const id of this.#pendingCalls) this.#o.tools?.cancel(id);
    this.#pendingCalls.clear();
    this.#welcomed = false;
    this.#applied = false;
    this.#sending = false;
    this.#dropping = false;
    this.#lastSentAt = this.#clock.now();
    this.#armKeepAlive(KEEPALIVE_MS);
    this.#clearHandshake();
    // An agent that never welcomes the bridge or applies its settings is of no use: cut and redialled.
    this.#handshake = this.#clock.setTimeout(() => {
      this.#handshake = undefined;
      if (this.#applied) return;
      this.log.warn(
        { bot: this.name, welcomed: this.#welcomed },
        'deepgram agent did not apply the settings in time; redialling',
      );
      this.drop();
    }, this.o.connectTimeoutMs);
    this.#handshake.unref();
  }

  protected received(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      this.#agentAudio(data);
      return;
    }
    let m: { type?: unknown; [k: string]: unknown };
    try {
      m = JSON.parse(data.toString('utf8'));
    } catch {
      throw new BridgeError('bad_json', 'a message from the Deepgram agent is not JSON');
    }
    if (!isObject(m) || typeof m.type !== 'string')
      throw new BridgeError('unknown_event', 'a message from the Deepgram agent has no type');
    if (!SERVER_MESSAGES.has(m.type))
      throw new BridgeError(
        'unknown_event',
        `message type ${JSON.stringify(m.type.slice(0, 64))} is not one the Deepgram agent sends`,
      );
    switch (m.type) {
      case 'Welcome':
        this.#welcome();
        return;
      case 'SettingsApplied':
        this.#settingsApplied();
        return;
      case 'UserStartedSpeaking':
        this.#bargeIn();
        return;
      case 'AgentStartedSpeaking':
        this.#dropping = false;
        this.#sending = true;
        return;
      case 'AgentAudioDone':
        this.#turnSent();
        return;
      case 'ConversationText':
        // The caller's words come once the cut turn is over: nothing later is of it.
        if ((m as unknown as Deepgram.AgentV1ConversationText).role === 'user') this.#endDrop();
        return;
      case 'FunctionCallRequest':
        this.#functionCalls(m as unknown as Deepgram.AgentV1FunctionCallRequest);
        return;
      case 'FunctionCallCancelled':
        this.#functionsCancelled(m as unknown as Deepgram.AgentV1FunctionCallCancelled);
        return;
      case 'Error':
      case 'Warning': {
        const e = m as unknown as Deepgram.AgentV1Error;
        const fields = {
          code: typeof e.code === 'string' ? e.code.slice(0, 128) : undefined,
          description: typeof e.description === 'string' ? e.description.slice(0, 512) : undefined,
        };
        if (m.type === 'Error') this.log.warn(fields, 'deepgram agent error message');
        else this.log.info(fields, 'deepgram agent warning message');
        return;
      }
      case 'InjectionRefused':
        this.log.info('deepgram agent refused an injected message');
        return;
      default:
        // Transcripts, thinking, latency reports, update confirmations: nothing for the call.
        return;
    }
  }

  protected farewell(): void {
    // Deepgram has no closing message: the socket's close is the end.
  }

  /** Deepgram has no message for a notice (a message's status): none is sent. */
  protected override notice(): undefined {
    return undefined;
  }

  /** A normal close once the session was set up is the agent ending the call. */
  protected override closedAsHangup(code: number): boolean {
    return code === 1000 && this.#applied;
  }

  protected override ended(): void {
    this.#clearHandshake();
    if (this.#keepAlive !== undefined) this.#clock.clearTimeout(this.#keepAlive);
    this.#digitRuns.clear();
    this.#keepAlive = undefined;
    this.#held = [];
    this.#pendingCalls.clear();
  }

  #welcome(): void {
    if (this.#welcomed) return;
    this.#welcomed = true;
    this.sendText(JSON.stringify(this.#settingsMessage()));
    this.#lastSentAt = this.#clock.now();
  }

  /**
   * `Settings`: the tenant's `settings` at the top level, then the bridge's own: the type, the audio
   * formats, and in `agent.think` (each entry of a list) `instructions` as the prompt and the call's
   * tools after the tenant's own functions.
   */
  #settingsMessage(): Record<string, unknown> {
    const { formats, instructions } = this.#o;
    const tenant = structuredClone(this.#o.settings ?? {}) as Record<string, unknown>;
    let agent = tenant.agent ?? {};
    const functions = this.#functions();
    if (instructions !== undefined || functions !== undefined) {
      if (isObject(agent)) {
        const think = agent.think;
        const ours = (t: Record<string, unknown>) => ({
          ...t,
          ...(instructions !== undefined && { prompt: instructions }),
          ...(functions !== undefined && { functions: withFunctions(t.functions, functions) }),
        });
        agent = {
          ...agent,
          think: Array.isArray(think)
            ? think.map((t) => (isObject(t) ? ours(t) : t))
            : ours(isObject(think) ? think : {}),
        };
      } else
        this.log.warn(
          'settings.agent is not an object (a stored agent configuration): instructions and tools are not added to it',
        );
    }
    return {
      ...tenant,
      type: 'Settings',
      audio: {
        input: wireFormat(formats.toBot),
        output: { ...wireFormat(formats.fromBot), container: 'none' },
      },
      agent,
    };
  }

  /** The call's tools as Deepgram's client-side functions (no `endpoint`); undefined when it has none. */
  #functions(): (ThinkSettingsV1.Functions.Item & { readonly name: string })[] | undefined {
    const specs = this.#o.tools?.specs ?? [];
    if (specs.length === 0) return undefined;
    return specs.map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters as Record<string, unknown>,
      defer_until_eot: true,
    }));
  }

  #settingsApplied(): void {
    if (this.#applied) return;
    this.#applied = true;
    this.#everApplied = true;
    this.#clearHandshake();
    this.confirmOpen();
    const held = this.#held;
    this.#held = [];
    for (const h of held) {
      if ('text' in h) this.sendText(h.text);
      else this.audio(h.audio);
    }
  }

  #clearHandshake(): void {
    if (this.#handshake !== undefined) this.#clock.clearTimeout(this.#handshake);
    this.#handshake = undefined;
  }

  #hold(h: Held): void {
    if (this.#held.length >= MAX_HELD) this.#held.shift();
    this.#held.push(h);
  }

  #inject(content: string): void {
    const text = JSON.stringify({ type: 'InjectUserMessage', content });
    if (this.#applied) this.sendText(text);
    else this.#hold({ text });
  }

  #agentAudio(data: Buffer): void {
    if (this.#pcmOut && (data.length & 1) !== 0)
      throw new BridgeError('odd_length', `linear16 audio must be an even byte count, got ${data.length}`);
    if (this.#dropping) {
      this.#droppedBytes += data.length;
      return;
    }
    if (data.length === 0) return;
    this.#sending = true;
    this.#unplayed = true;
    this.#audioSinceMark = true;
    this.port.audio(data);
  }

  /** The turn's audio is all sent: a mark after it says when it has played. */
  #turnSent(): void {
    this.#endDrop();
    this.#sending = false;
    if (!this.#audioSinceMark) return;
    this.#audioSinceMark = false;
    this.port.mark(`dg:${++this.#marks}`);
  }

  /** The caller spoke over the agent: its audio stops at the caller, and what is still in flight is dropped. */
  #bargeIn(): void {
    if (this.#unplayed) {
      this.port.clear();
      this.#unplayed = false;
      this.#audioSinceMark = false;
    }
    if (this.#sending) {
      this.#dropping = true;
      this.#droppedBytes = 0;
    }
  }

  #endDrop(): void {
    if (!this.#dropping) return;
    this.#dropping = false;
    if (this.#droppedBytes > 0)
      this.log.debug({ bytes: this.#droppedBytes }, 'audio of an interrupted turn dropped');
  }

  /**
   * The agent asks the client to run functions: each client-side one goes to the call's tools and is
   * answered to its own id once it has run (server-side ones are Deepgram's to run).
   */
  #functionCalls(m: Deepgram.AgentV1FunctionCallRequest): void {
    if (!Array.isArray(m.functions)) return;
    for (const f of m.functions) {
      if (!isObject(f) || f.client_side !== true || typeof f.id !== 'string') continue;
      const id = f.id;
      const name = typeof f.name === 'string' ? f.name : '';
      const tools = this.#o.tools;
      if (tools === undefined) {
        this.#answer(id, name, { error: 'not_found', message: 'this call has no tools' });
        continue;
      }
      if (this.#pendingCalls.has(id)) continue;
      this.#pendingCalls.add(id);
      tools.call({ callId: id, name, arguments: f.arguments }, (output) => {
        // Deepgram has no way to take an output without a reply: `respond` is not asked of it.
        if (this.#pendingCalls.delete(id)) this.#answer(id, name, output);
      });
    }
  }

  #answer(id: string, name: string, output: ToolOutput): void {
    this.sendText(
      JSON.stringify({
        type: 'FunctionCallResponse',
        id,
        name,
        content: JSON.stringify(output),
      } satisfies Deepgram.AgentV1SendFunctionCallResponse),
    );
  }

  /** The caller spoke again: the calls named are withdrawn, and no answer goes for them. */
  #functionsCancelled(m: Deepgram.AgentV1FunctionCallCancelled): void {
    if (!Array.isArray(m.functions)) return;
    for (const f of m.functions) {
      if (!isObject(f) || typeof f.id !== 'string' || !this.#pendingCalls.delete(f.id)) continue;
      this.#o.tools?.cancel(f.id);
    }
  }

  /** The keep-alive check, `ms` from now: a `KeepAlive` when no caller audio went for KEEPALIVE_MS. */
  #armKeepAlive(ms: number): void {
    if (this.#keepAlive !== undefined) this.#clock.clearTimeout(this.#keepAlive);
    this.#keepAlive = this.#clock.setTimeout(() => {
      this.#keepAlive = undefined;
      if (!this.connected) return; // the next socket's handshake arms it again
      const quiet = this.#clock.now() - this.#lastSentAt;
      if (quiet >= KEEPALIVE_MS) {
        this.sendText('{"type":"KeepAlive"}');
        this.#lastSentAt = this.#clock.now();
        this.#armKeepAlive(KEEPALIVE_MS);
      } else this.#armKeepAlive(KEEPALIVE_MS - quiet);
    }, ms);
    this.#keepAlive.unref();
  }
}

/** The `deepgram-agent` dialect (src/dialects/bot/deepgram-agent.ts): a client of Deepgram's Voice Agent. */
export const deepgramAgentBot: BotDialect = {
  decl: deepgramAgent,
  format: (_settings, caller) => deepgramFormats(caller),
  create: (call, port, { link, settings, formats, tools }) =>
    new DeepgramAgentBot(call, port, {
      ...link,
      ...(settings.apiKey !== undefined && { headers: { authorization: `Token ${settings.apiKey}` } }),
      formats,
      instructions: settings.instructions,
      settings: settings.settings,
      dtmf: settings.dtmf,
      tools,
    }),
};
