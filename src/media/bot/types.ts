/**
 * The bot leg as the session sees it, whatever the bot is: a ws bot or a built-in one. Audio both ways
 * is in the bot's format (today PCM16 LE mono at BOT_SAMPLE_RATE for every bot).
 */
import type { BridgeError } from '../../errors.js';
import type { Format } from '../../pipeline/types.js';

/**
 * What a bot leg drives: the call's bot -> caller line (src/media/bot-ports.ts), one object per call, not
 * a closure per frame. Audio and events go in in the order the bot sent them and keep that order through
 * the DSP to the provider.
 */
export interface CallerPort {
  /** Bot audio in the bot leg's format, a whole number of samples; not kept after the call. */
  audio(pcm: Uint8Array): void;
  /**
   * A mark: the provider gets it once the audio before it has been sent, and the bot hears of it once,
   * played or cleared (the mark rule of src/audio/playout.ts).
   */
  mark(name: string): void;
  /** A digit for the provider, behind the audio before it. */
  dtmf(digit: string): void;
  /** The bot hangs up: its audio plays out, then the provider is told and the call ends. */
  hangup(reason: string): void;
  /** Barge-in: the bot's audio not yet played is dropped, in the DSP and the outbound writer. */
  clear(): void;
  /**
   * The bot could not be reached or dropped; the call goes on. The provider is told in its dialect's
   * error message where it has one (our own protocol's `error` event), and nothing where it has none.
   */
  failed(err: BridgeError): void;
  /**
   * The bot's audio formats, from a dialect that learns them only once connected
   * (BotDialect.formatsFromBot): the session opens the call's legs at them, and the caller's audio held
   * until then flows. Called before any audio, mark, digit or hang-up of the bot's. True when taken: the
   * first report, or one naming the formats already taken (a redial); false for other formats then, or
   * for a dialect whose legs opened at the start at other formats, and where the port has none (a test's).
   */
  formats?(f: BotFormats): boolean;
}

/** The bot's audio, each way: what the caller leg delivers to it, and what it sends. */
export interface BotFormats {
  readonly toBot: Format;
  readonly fromBot: Format;
}

/** The call as the bot is told of it in `session_start`. */
export interface BotCall {
  readonly session_id: string;
  readonly tenant: string;
  readonly customer_phone: string | undefined;
  readonly direction: 'inbound' | 'outbound' | undefined;
  readonly started_at: string;
}

export interface BotLeg {
  /** Caller audio in the bot's format; a view valid during the call only (copy what is kept). */
  audio(pcm: Uint8Array): void;
  dtmf(digit: string): void;
  /**
   * A mark the bot sent is reported: the caller has played the audio before it, or (`cleared`) a clear
   * dropped that audio. Once per mark (src/audio/playout.ts).
   */
  mark(name: string, cleared: boolean): void;
  /** Tells the bot the call ended and lets go of it. Idempotent. */
  end(reason: string): void;
  /** Called by the shared heartbeat timer: a socket bot that missed the last ping is cut (and redialled). */
  heartbeat?(): void;
  /**
   * An event about the call from outside the media path, e.g. a message's status (`message_status`) or
   * a tapped button (`message_button`): a ws bot gets it as a JSON text frame; built-in bots ignore it.
   */
  notify?(event: BotNotice): void;
  /**
   * Asks the model to speak (the idle policy's reprompt): `text` as a user text, and a response request
   * where the dialect has one. Dialects without a model leave it out.
   */
  prompt?(text: string): void;
}

/** A tool as the model is told of it at the session's start (src/tools/ makes the list). */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments, `type: "object"`. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** What a tool answers the model: a JSON object (`{error, message}` when it failed). */
export type ToolOutput = Readonly<Record<string, unknown>>;

/** One call of a tool by the model, as its dialect carries it. */
export interface ToolRequest {
  /** The model's own id for the call (OpenAI `call_id`, Gemini `id`, our protocol's `id`, ...). */
  readonly callId: string;
  readonly name: string;
  /** The arguments: the object, or the JSON text of one (as OpenAI and Deepgram send them). */
  readonly arguments: unknown;
}

/**
 * The call's tools as a bot dialect sees them (src/tools/ runs them; undefined when the bot has none).
 * A dialect declares `specs` in its own form when its session starts, hands each call of a tool by the
 * model to `call`, and sends `answer`'s output back in its own answer message. `answer` is called once
 * per call, later (never from inside `call`), unless the call was cancelled or the session ended;
 * several calls may be in flight at once, each answered to its own id. `respond` false (after
 * `end_call`: the call is ending) asks the dialect not to request a response where it would. `cancel`
 * is the model withdrawing a call (Gemini's `toolCallCancellation`): no answer comes for it.
 */
export interface BotTools {
  readonly specs: readonly ToolSpec[];
  call(request: ToolRequest, answer: (output: ToolOutput, respond: boolean) => void): void;
  cancel(callId: string): void;
}

/** What `notify` hands a bot: a JSON object with its `event` name. */
export interface BotNotice {
  readonly event: string;
  readonly [field: string]: unknown;
}
