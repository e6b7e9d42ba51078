/**
 * The `gemini-live` dialect: the bridge is a client of Google's Gemini Live API (`BidiGenerateContent`),
 * dialled at session_start with the key as the `x-goog-api-key` header (a URL may carry it as `?key=`
 * instead, as Google's own examples do; it is then never logged, as no bot URL's query is).
 *
 *   open:       `setup` first: `model` as `models/<model>`, `generationConfig.responseModalities:
 *               ["AUDIO"]`, `voice` as a prebuilt voice's name, `instructions` as `systemInstruction`,
 *               automatic activity detection with speech interrupting the model, the call's tools as
 *               `tools[].functionDeclarations`, and `sessionResumption`: `{}` on the first connection
 *               (Google sends resumption handles only then), `{handle}` on a later one. Nothing else goes
 *               before `setupComplete`: the caller's audio and digits wait, in order and bounded. No
 *               `setupComplete` within BOT_CONNECT_TIMEOUT_MS, or a close before it, is a failed dial
 *   caller:     `realtimeInput.audio {data, mimeType: "audio/pcm;rate=16000"}`, AUDIO_CHUNK_MS a message
 *   model:      every part of `serverContent.modelTurn` holding `inlineData` audio (PCM16 at 24 kHz, the
 *               rate its `mimeType` names or none) goes to the caller, paced by the outbound writer. The
 *               server's JSON may come in binary frames
 *   barge-in:   `serverContent.interrupted` clears the caller's playback (bridge queue, DSP, provider
 *               `clear`) while any of the model's audio may still be playing, and audio still arriving of
 *               the cut turn is dropped until that turn's `turnComplete` (Google has no truncate)
 *   limits:     `sessionResumptionUpdate` handles (where `resumable`) are kept. On `goAway`, the bridge
 *               moves to a new connection that resumes the session with the latest handle: at once when
 *               the model is between turns, else when its turn completes (and its next handle comes), and
 *               at the latest MOVE_LEAD_MS before `timeLeft` runs out. The caller's audio meanwhile is held
 *               and sent on the new connection once set up; the model's audio already received plays on
 *   DTMF:       a user text `[DTMF 5]` as `realtimeInput.text` (Google takes client content mid-session
 *               on some models only), which the model answers. BOT_DTMF / bot.dtmf: `respond`, each
 *               digit at once; `text` (default), a run of digits (none for DIGIT_RUN_MS) as one text;
 *               `ignore`
 *   tools:      a `toolCall`'s function calls go to the call's tools (src/tools/), each answered by a
 *               `toolResponse.functionResponses [{id, name, response}]` (the output as `response`: an
 *               `error` key in it is Google's error form); a `toolCallCancellation` drops the pending
 *               answers it names. `end_call`'s answer is not sent: the model would speak on
 *   errors:     Google reports a refused message or an ended session in the close frame: its code and
 *               reason are logged. A close with 1000 once set up is the model ending the call: its
 *               audio already sent plays out first
 *
 * Whether audio may still be playing: the dialect places a mark (`gl:<n>`) at the end of each turn's
 * audio; once the latest one is reported (played, or dropped by a clear) with no audio since, nothing is.
 */
import type {
  LiveClientMessage,
  LiveServerContent,
  LiveServerMessage,
  LiveServerSessionResumptionUpdate,
  LiveServerToolCall,
} from '@google/genai';
import { fromBase64, toBase64 } from '../../audio/codec.js';
import { type Clock, type ClockTimer, systemClock } from '../../clock.js';
import { GEMINI_LIVE_MODEL, geminiLive } from '../../dialects/bot/gemini-live.js';
import type { DtmfMode } from '../../dialects/bot/speech.js';
import { BridgeError } from '../../errors.js';
import type { BotDialect } from './dialect.js';
import { DigitRuns } from './digit-runs.js';
import type { BotCall, BotFormats, BotTools, CallerPort, ToolOutput } from './types.js';
import { WsLink, type WsLinkOptions } from './ws-link.js';

/** Caller audio per `realtimeInput` message: 40 ms, within Google's advice of 20 to 40 ms chunks. */
export const AUDIO_CHUNK_MS = 40;
/** After `goAway`, the move to a new connection starts at the latest this long before the time runs out. */
export const MOVE_LEAD_MS = 3_000;
/** After the turn that held up a move completes, how long its fresh handle is waited for. */
export const HANDLE_WAIT_MS = 250;
/**
 * What waits for `setupComplete`, in frames and messages: 5 s of 20 ms frames, the oldest dropped past
 * it (a first dial, or a move that takes that long).
 */
const MAX_HELD = 250;

/** The caller's audio as the Live API takes it natively, and the model's as it always sends it. */
export const GEMINI_FORMATS: BotFormats = {
  toBot: { codec: 'slin', rate: 16_000 },
  fromBot: { codec: 'slin', rate: 24_000 },
};
const INPUT_MIME = `audio/pcm;rate=${GEMINI_FORMATS.toBot.rate}`;

/** The server message fields the dialect knows; a message with none of them is skipped and counted. */
const SERVER_FIELDS = [
  'setupComplete',
  'serverContent',
  'toolCall',
  'toolCallCancellation',
  'usageMetadata',
  'goAway',
  'sessionResumptionUpdate',
  'voiceActivityDetectionSignal',
  'voiceActivity',
] as const satisfies readonly (keyof LiveServerMessage)[];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A protobuf Duration in JSON (`"5s"`, `"1.500s"`) in ms; undefined when it is not one. */
export function durationMs(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^(\d{1,9})(?:\.(\d{1,9}))?s$/.exec(v);
  if (m === null) return undefined;
  return Number(m[1]) * 1000 + Math.floor(Number(`0.${m[2] ?? '0'}`) * 1000);
}

/** `models/<name>`, as the setup names a model. */
export function modelResource(model: string | undefined): string {
  const name = model ?? GEMINI_LIVE_MODEL;
  return name.startsWith('models/') ? name : `models/${name}`;
}

export interface GeminiLiveOptions extends WsLinkOptions {
  readonly model?: string | undefined;
  readonly instructions?: string | undefined;
  readonly voice?: string | undefined;
  readonly dtmf?: DtmfMode | undefined;
  readonly tools?: BotTools | undefined;
}

/**
 * `setup` as the bridge writes it: js-genai's own type names its enums' values by TypeScript enums,
 * which the JSON carries as the strings here.
 */
interface Setup {
  readonly model: string;
  readonly generationConfig: {
    readonly responseModalities: readonly ['AUDIO'];
    readonly speechConfig?: {
      readonly voiceConfig: { readonly prebuiltVoiceConfig: { readonly voiceName: string } };
    };
  };
  readonly systemInstruction?: { readonly parts: readonly [{ readonly text: string }] };
  readonly realtimeInputConfig: {
    readonly automaticActivityDetection: { readonly disabled: false };
    readonly activityHandling: 'START_OF_ACTIVITY_INTERRUPTS';
  };
  readonly tools?: readonly {
    readonly functionDeclarations: readonly {
      readonly name: string;
      readonly description: string;
      readonly parametersJsonSchema: unknown;
    }[];
  }[];
  readonly sessionResumption: { readonly handle?: string };
}

/** What the bridge sends: its `setup`, else the client messages as js-genai types them. */
type ClientMessage = { readonly setup: Setup } | Omit<LiveClientMessage, 'setup'>;

/** A message or an audio frame waiting for `setupComplete`. */
type Held = { readonly text: string } | { readonly audio: Uint8Array };

export class GeminiLiveBot extends WsLink {
  readonly #o: GeminiLiveOptions;
  readonly #clock: Clock;
  readonly #batch: Uint8Array;
  #batched = 0;
  /** This connection answered its setup; some connection did once. */
  #ready = false;
  #everReady = false;
  #held: Held[] = [];
  #heldDropped = 0;
  /** The bound on the handshake: `setupComplete` within BOT_CONNECT_TIMEOUT_MS of the socket opening. */
  #handshake: ClockTimer | undefined;
  /** The latest resumption handle, and whether this connection's setup named it. */
  #handle: string | undefined;
  #resumedWith: string | undefined;
  /** A `goAway` came: the move is due at the next turn boundary, or at `#moveTimer` at the latest. */
  #moveDue = false;
  #moveTimer: ClockTimer | undefined;
  /** A move is under way: from the old connection's close to the new one's `setupComplete`. */
  #moving = false;
  #movedAt = 0;
  /** The model's turn is open: from its first content to its `turnComplete`. */
  #turnOpen = false;
  /** Audio of an interrupted turn is dropped until its `turnComplete`. */
  #dropping = false;
  #droppedBytes = 0;
  /** Audio was passed to the caller that may not have played yet, and any since the latest mark. */
  #unplayed = false;
  #audioSinceMark = false;
  #marks = 0;
  /** The caller's digits as the model's user text, a run at a time in `text` mode. */
  readonly #digitRuns: DigitRuns;
  /** Tool calls of this connection not yet answered: id -> name. */
  readonly #pendingCalls = new Map<string, string>();

  /** A connection is of use once its setup is complete: one closed before counts toward BOT_RETRIES. */
  protected override readonly confirmsOpen = true;

  constructor(call: BotCall, port: CallerPort, o: GeminiLiveOptions) {
    super(call, port, o);
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
    this.#digitRuns = new DigitRuns(o.dtmf, this.#clock, (text) => this.#userText(text));
    this.#batch = new Uint8Array((GEMINI_FORMATS.toBot.rate / 1000) * 2 * AUDIO_CHUNK_MS);
    this.start();
  }

  audio(data: Uint8Array): void {
    if (!this.#ready) {
      // Held for a first setup and across a move; during a redial after a loss, the caller hears
      // silence and what they say is not kept (as WsLink does for every dialect).
      if (!this.#everReady || this.#moving) this.#hold({ audio: new Uint8Array(data) });
      return;
    }
    let at = 0;
    while (at < data.length) {
      const n = Math.min(data.length - at, this.#batch.length - this.#batched);
      this.#batch.set(data.subarray(at, at + n), this.#batched);
      this.#batched += n;
      at += n;
      if (this.#batched === this.#batch.length) this.#flush();
    }
  }

  dtmf(digit: string): void {
    this.#digitRuns.digit(digit);
  }

  /** Asks the model to speak (the idle policy): a user text, which the model answers. */
  prompt(text: string): void {
    this.#userText(text);
  }

  /** The latest of our marks reported (played or cleared) with no audio since: nothing of the model's plays. */
  mark(name: string): void {
    if (name === `gl:${this.#marks}`) this.#unplayed = this.#audioSinceMark;
  }

  protected opened(): void {
    this.#ready = false;
    this.#batched = 0;
    this.#turnOpen = false;
    this.#dropping = false;
    // Calls of the connection before are the old session's: no answer of theirs can reach the model now.
    for (const id of this.#pendingCalls.keys()) this.#o.tools?.cancel(id);
    this.#pendingCalls.clear();
    this.#resumedWith = this.#handle;
    this.#send({ setup: this.#setup() });
    this.#clearHandshake();
    // A server that never completes the setup is of no use: cut and redialled.
    this.#handshake = this.#clock.setTimeout(() => {
      this.#handshake = undefined;
      if (this.#ready) return;
      this.log.warn({ bot: this.name }, 'gemini live did not complete the setup in time; redialling');
      this.drop();
    }, this.o.connectTimeoutMs);
    this.#handshake.unref();
  }

  protected received(data: Buffer, _isBinary: boolean): void {
    // Google sends its JSON in binary frames as well as text ones: both are read alike.
    let m: unknown;
    try {
      m = JSON.parse(data.toString('utf8'));
    } catch {
      throw new BridgeError('bad_json', 'a message from Gemini Live is not JSON');
    }
    if (!isObject(m)) throw new BridgeError('unknown_event', 'a message from Gemini Live is not an object');
    if (!SERVER_FIELDS.some((f) => m[f] !== undefined)) {
      const first = Object.keys(m)[0];
      throw new BridgeError(
        'unknown_event',
        first === undefined
          ? 'a message from Gemini Live is empty'
          : `message ${JSON.stringify(first.slice(0, 64))} is not one Gemini Live sends`,
      );
    }
    const msg = m as Omit<LiveServerMessage, 'text' | 'data'>;
    if (msg.setupComplete !== undefined) this.#setupComplete();
    if (msg.sessionResumptionUpdate !== undefined) this.#resumption(msg.sessionResumptionUpdate);
    if (msg.serverContent !== undefined) this.#serverContent(msg.serverContent);
    if (msg.toolCall !== undefined) this.#toolCall(msg.toolCall);
    if (msg.toolCallCancellation !== undefined) this.#toolCancel(msg.toolCallCancellation.ids);
    if (msg.goAway !== undefined) this.#goAway(msg.goAway.timeLeft);
  }

  protected farewell(): void {
    // The Live API has no closing message: the socket's close is the end.
    this.#flush();
  }

  /** Gemini has no message for a notice (a message's status): none is sent. */
  protected override notice(): undefined {
    return undefined;
  }

  /**
   * Google says why it closed in the close frame (a refused setup, an expired deadline): logged. A normal
   * close once set up is the model ending the call.
   */
  protected override closedAsHangup(code: number, reason: string): boolean {
    if (code === 1000 && this.#ready) return true;
    this.log.warn(
      { bot: this.name, code, reason: reason.slice(0, 240) },
      'gemini live closed the connection',
    );
    if (!this.#ready && this.#resumedWith !== undefined && this.#resumedWith === this.#handle) {
      // The handle may be what was refused: the next connection starts a new session.
      this.log.warn('gemini live refused to resume the session; the next connection starts a new one');
      this.#handle = undefined;
    }
    return false;
  }

  protected override ended(): void {
    this.#clearHandshake();
    this.#clearMove();
    this.#digitRuns.clear();
    this.#held = [];
    this.#pendingCalls.clear();
  }

  #setup(): Setup {
    const { instructions, voice } = this.#o;
    const specs = this.#o.tools?.specs ?? [];
    return {
      model: modelResource(this.#o.model),
      generationConfig: {
        responseModalities: ['AUDIO'],
        ...(voice !== undefined && {
          speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: voice } } },
        }),
      },
      ...(instructions !== undefined && { systemInstruction: { parts: [{ text: instructions }] } }),
      realtimeInputConfig: {
        automaticActivityDetection: { disabled: false },
        activityHandling: 'START_OF_ACTIVITY_INTERRUPTS',
      },
      ...(specs.length > 0 && {
        tools: [
          {
            functionDeclarations: specs.map((t) => ({
              name: t.name,
              description: t.description,
              // Our tools' arguments are JSON Schema, which Google takes as such here (its `parameters`
              // is an OpenAPI subset that refuses some of JSON Schema's words).
              parametersJsonSchema: t.parameters,
            })),
          },
        ],
      }),
      sessionResumption: this.#resumedWith === undefined ? {} : { handle: this.#resumedWith },
    };
  }

  #setupComplete(): void {
    if (this.#ready) return;
    this.#ready = true;
    this.#everReady = true;
    this.#clearHandshake();
    this.confirmOpen();
    if (this.#moving) {
      this.#moving = false;
      this.log.info(
        {
          ms: Math.round(this.#clock.now() - this.#movedAt),
          resumed: this.#resumedWith !== undefined,
          held: this.#held.length,
        },
        'gemini live session moved to a new connection',
      );
    }
    const held = this.#held;
    this.#held = [];
    if (this.#heldDropped > 0)
      this.log.warn({ frames: this.#heldDropped }, 'caller audio dropped while gemini live was set up');
    this.#heldDropped = 0;
    for (const h of held) {
      if ('text' in h) this.#sendText(h.text);
      else this.audio(h.audio);
    }
  }

  #resumption(u: LiveServerSessionResumptionUpdate): void {
    if (u.resumable === false || typeof u.newHandle !== 'string' || u.newHandle === '') return;
    this.#handle = u.newHandle;
    // A move waiting for the turn that held it up: this is the handle after it.
    if (this.#moveDue && !this.#busy()) this.#move();
  }

  #serverContent(c: LiveServerContent): void {
    if (c.interrupted === true) this.#bargeIn();
    const parts = c.modelTurn?.parts;
    if (Array.isArray(parts)) {
      this.#turnOpen = true;
      for (const part of parts) {
        const blob = isObject(part) ? part.inlineData : undefined;
        if (blob !== undefined) this.#modelAudio(blob);
      }
    }
    if (c.generationComplete === true) this.#turnSent();
    if (c.turnComplete === true) this.#turnComplete();
  }

  #modelAudio(blob: unknown): void {
    if (!isObject(blob) || typeof blob.data !== 'string' || typeof blob.mimeType !== 'string')
      throw new BridgeError('invalid_field', 'inlineData needs data and mimeType strings', {
        field: 'inlineData',
      });
    const m = /^audio\/pcm(?:;\s*rate=(\d+))?$/i.exec(blob.mimeType);
    if (m === null) return; // not audio: nothing for the caller
    const rate = m[1] === undefined ? GEMINI_FORMATS.fromBot.rate : Number(m[1]);
    if (rate !== GEMINI_FORMATS.fromBot.rate)
      throw new BridgeError(
        'invalid_field',
        `inlineData audio must be PCM16 at ${GEMINI_FORMATS.fromBot.rate} Hz, got rate ${rate}`,
        { field: 'inlineData.mimeType' },
      );
    const audio = fromBase64(blob.data);
    if ((audio.length & 1) !== 0)
      throw new BridgeError('odd_length', `PCM16 audio must be an even byte count, got ${audio.length}`);
    if (this.#dropping) {
      this.#droppedBytes += audio.length;
      return;
    }
    if (audio.length === 0) return;
    this.#unplayed = true;
    this.#audioSinceMark = true;
    this.port.audio(audio);
  }

  /** The turn's audio is all sent: a mark after it says when it has played. */
  #turnSent(): void {
    if (!this.#audioSinceMark) return;
    this.#audioSinceMark = false;
    this.port.mark(`gl:${++this.#marks}`);
  }

  #turnComplete(): void {
    this.#turnSent();
    this.#turnOpen = false;
    if (this.#dropping) {
      this.#dropping = false;
      if (this.#droppedBytes > 0)
        this.log.debug({ bytes: this.#droppedBytes }, 'audio of an interrupted turn dropped');
    }
    if (this.#moveDue && !this.#busy()) {
      // Google sends the handle after a turn soon after it: the move takes that one, or goes without.
      this.#clearMoveTimer();
      this.#moveTimer = this.#clock.setTimeout(() => this.#move(), HANDLE_WAIT_MS);
      this.#moveTimer.unref();
    }
  }

  /** The caller spoke over the model: its audio stops at the caller, and the rest of the turn is dropped. */
  #bargeIn(): void {
    if (this.#unplayed) {
      this.port.clear();
      this.#unplayed = false;
      this.#audioSinceMark = false;
    }
    if (this.#turnOpen) {
      this.#dropping = true;
      this.#droppedBytes = 0;
    }
  }

  /** `goAway`: the connection ends in `timeLeft`; the session moves to a new one before then. */
  #goAway(timeLeft: unknown): void {
    if (this.#moveDue || this.#moving) return;
    const ms = durationMs(timeLeft);
    this.log.info(
      { time_left: typeof timeLeft === 'string' ? timeLeft.slice(0, 32) : undefined },
      'gemini live connection ends soon; moving to a new one',
    );
    this.#moveDue = true;
    if (!this.#busy() || ms === undefined || ms <= MOVE_LEAD_MS) {
      this.#move();
      return;
    }
    this.#moveTimer = this.#clock.setTimeout(() => this.#move(), ms - MOVE_LEAD_MS);
    this.#moveTimer.unref();
  }

  /** The model is mid-turn or waits for tool answers: a move would cut it off. */
  #busy(): boolean {
    return this.#turnOpen || this.#pendingCalls.size > 0;
  }

  #move(): void {
    if (!this.#moveDue) return;
    this.#clearMove();
    if (!this.connected) return; // lost meanwhile: the redial resumes with the handle
    this.#moving = true;
    this.#movedAt = this.#clock.now();
    if (this.#handle === undefined)
      this.log.warn('gemini live gave no resumption handle; the new connection starts a new session');
    // Caller audio batched and not sent goes first on the new connection.
    if (this.#batched > 0) this.#hold({ audio: this.#batch.slice(0, this.#batched) });
    this.#batched = 0;
    this.#ready = false;
    this.moveConnection();
  }

  #clearMoveTimer(): void {
    if (this.#moveTimer !== undefined) this.#clock.clearTimeout(this.#moveTimer);
    this.#moveTimer = undefined;
  }

  #clearMove(): void {
    this.#moveDue = false;
    this.#clearMoveTimer();
  }

  /** The model asks the client to run functions: each goes to the call's tools, answered to its id. */
  #toolCall(call: LiveServerToolCall): void {
    if (!Array.isArray(call.functionCalls)) return;
    for (const f of call.functionCalls) {
      if (!isObject(f) || typeof f.id !== 'string' || typeof f.name !== 'string') continue;
      const { id, name } = f;
      const tools = this.#o.tools;
      if (tools === undefined) {
        this.#answer(id, name, { error: 'not_found', message: 'this call has no tools' });
        continue;
      }
      this.#pendingCalls.set(id, name);
      tools.call({ callId: id, name, arguments: f.args ?? {} }, (output, respond) => {
        if (this.#pendingCalls.get(id) !== name) return; // cancelled, or of a connection before
        this.#pendingCalls.delete(id);
        // The call is ending (`end_call`): an answer would only make the model speak on.
        if (respond) this.#answer(id, name, output);
        if (this.#moveDue && !this.#busy()) this.#move();
      });
    }
  }

  #toolCancel(ids: unknown): void {
    if (!Array.isArray(ids)) return;
    for (const id of ids) {
      if (typeof id !== 'string' || !this.#pendingCalls.delete(id)) continue;
      this.#o.tools?.cancel(id);
    }
    if (this.#moveDue && !this.#busy()) this.#move();
  }

  #answer(id: string, name: string, output: ToolOutput): void {
    this.#send({ toolResponse: { functionResponses: [{ id, name, response: { ...output } }] } });
  }

  #userText(text: string): void {
    this.#send({ realtimeInput: { text } });
  }

  #flush(): void {
    if (this.#batched === 0) return;
    const data = toBase64(this.#batch.subarray(0, this.#batched));
    this.#batched = 0;
    this.sendAudio(JSON.stringify({ realtimeInput: { audio: { data, mimeType: INPUT_MIME } } }));
  }

  /** A message to the server: after the caller's audio before it; held until the setup is complete. */
  #send(m: ClientMessage): void {
    const text = JSON.stringify(m);
    if ('setup' in m) this.sendText(text);
    else if (this.#ready) this.#sendText(text);
    else this.#hold({ text });
  }

  #sendText(text: string): void {
    this.#flush();
    this.sendText(text);
  }

  #hold(h: Held): void {
    if (this.#held.length >= MAX_HELD) {
      this.#held.shift();
      this.#heldDropped++;
    }
    this.#held.push(h);
  }

  #clearHandshake(): void {
    if (this.#handshake !== undefined) this.#clock.clearTimeout(this.#handshake);
    this.#handshake = undefined;
  }
}

/** The `gemini-live` dialect (src/dialects/bot/gemini-live.ts): a client of Google's Gemini Live API. */
export const geminiLiveBot: BotDialect = {
  decl: geminiLive,
  format: () => GEMINI_FORMATS,
  create: (call, port, { link, settings, tools }) =>
    new GeminiLiveBot(call, port, {
      ...link,
      ...(settings.apiKey !== undefined && {
        headers: { ...link.headers, 'x-goog-api-key': settings.apiKey },
      }),
      model: settings.model,
      instructions: settings.instructions,
      voice: settings.voice,
      dtmf: settings.dtmf,
      tools,
    }),
};
