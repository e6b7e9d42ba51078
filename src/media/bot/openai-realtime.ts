/**
 * The `openai-realtime` dialect: the bridge is a client of an OpenAI Realtime server (the GA interface),
 * dialled at session_start with `Authorization: Bearer <api_key>`, or, on a host of Azure's (a name
 * ending in `.azure.com`: Azure OpenAI's GA path `/openai/v1/realtime`), with `api-key: <api_key>`.
 *
 *   open:        `session.update` (type realtime, model, instructions, voice, turn detection, and the audio
 *                formats under session.audio: audio/pcmu or audio/pcma when the caller is G.711 8 kHz both
 *                ways, so the audio passes with no DSP at all; else audio/pcm at 24 kHz)
 *   caller:      `input_audio_buffer.append`, batched to APPEND_MS of audio per event
 *   model:       `response.output_audio.delta` to the caller, paced by the outbound writer
 *   barge-in:    on `input_audio_buffer.speech_started`, the caller's playback is cleared (bridge queue,
 *                DSP, provider `clear`) and `conversation.item.truncate` sent with the `audio_end_ms` the
 *                caller actually heard of that item, clamped to what the server sent
 *   DTMF:        a user text item "[DTMF 5]" (BOT_DTMF / bot.dtmf: `text`, the model takes it in with the next
 *                turn; `respond`, and a response at once; `ignore`)
 *   errors:      `error` events are logged with their type and code, and the call goes on
 *   tools:       declared in `session.update` (`tools` of type function); a call comes as
 *                `response.function_call_arguments.done` (or a function_call item of `response.done`,
 *                whichever is first) and is answered with a `function_call_output` item, then one
 *                `response.create` once every call in flight is answered and no response is active
 *   reprompt:    a user text item and `response.create` (the idle policy)
 *
 * What the caller heard: the dialect places its own marks (`vb:<n>:<ms>`) on the bot leg before an item's
 * first audio and after each delta. Each is reported when playback reaches it (the bridge's mark rule,
 * src/audio/playout.ts); from the last one reported played, playback runs on at real time (on the calls'
 * clock, as the marks are reported), up to the next mark not yet reported (the audio past it may not have
 * been played) and never past what the server sent.
 */
import type * as RT from 'openai/resources/realtime/realtime';
import { fromBase64, toBase64 } from '../../audio/codec.js';
import { systemClock } from '../../clock.js';
import type { TurnDetection } from '../../dialects/bot/openai-realtime.js';
import { openaiRealtime } from '../../dialects/bot/openai-realtime.js';
import type { DtmfMode } from '../../dialects/bot/speech.js';
import { BridgeError } from '../../errors.js';
import type { Format } from '../../pipeline/types.js';
import type { SessionFormat } from '../format.js';
import type { BotDialect } from './dialect.js';
import type { BotCall, BotTools, CallerPort, ToolOutput } from './types.js';
import { WsLink, type WsLinkOptions } from './ws-link.js';

/** Caller audio per `input_audio_buffer.append`: 60 ms, a few events a second per call, no audible lag. */
export const APPEND_MS = 60;
/** Items whose playback is tracked; older ones are forgotten. */
const MAX_ITEMS = 16;
const PCM24: Format = { codec: 'slin', rate: 24_000 };
/** Tool call ids remembered, so a call reported twice (its arguments' done event and `response.done`) runs once. */
const MAX_SEEN_CALLS = 64;

/** G.711 8 kHz both ways passes as it is; anything else is PCM16 at 24 kHz (the only PCM rate offered). */
export function realtimeFormat(caller: SessionFormat): Format {
  const g711 = caller.codec === 'pcmu' || caller.codec === 'pcma';
  if (g711 && caller.inputRate === 8000 && caller.outputRate === 8000)
    return { codec: caller.codec, rate: 8000 };
  return PCM24;
}

function wireFormat(f: Format): RT.RealtimeAudioFormats {
  if (f.codec === 'pcmu') return { type: 'audio/pcmu' };
  if (f.codec === 'pcma') return { type: 'audio/pcma' };
  return { type: 'audio/pcm', rate: 24000 };
}

function turnDetection(t: TurnDetection | undefined): RT.RealtimeAudioInputTurnDetection | null {
  if (t === 'none') return null;
  return { type: t ?? 'server_vad' };
}

export interface RealtimeBotOptions extends WsLinkOptions {
  readonly format: Format;
  readonly model?: string | undefined;
  readonly instructions?: string | undefined;
  readonly voice?: string | undefined;
  readonly turnDetection?: TurnDetection | undefined;
  readonly dtmf?: DtmfMode | undefined;
  readonly tools?: BotTools | undefined;
}

/** One model item's audio toward the caller, and how much of it the caller has heard. */
interface Item {
  readonly id: string;
  /** Our short number for it in mark names. */
  readonly n: number;
  /** Audio of the item the server sent, in ms. */
  sentMs: number;
  /** Mark positions placed (ms into the item), not yet reported played, oldest first. */
  marks: number[];
  /** The last mark reported played: its position and when. */
  heardMs: number;
  heardAt: number;
  /** A report came: playback has reached the item. */
  started: boolean;
  /** Truncated: nothing more of it plays, and late reports of its marks are ignored. */
  cut: boolean;
}

export class OpenAIRealtimeBot extends WsLink {
  readonly #o: RealtimeBotOptions;
  /** Bytes of caller audio per ms in the leg format. */
  readonly #bytesPerMs: number;
  readonly #batch: Uint8Array;
  #batched = 0;
  readonly #items: Item[] = [];
  #nextItem = 0;
  /** The calls' clock (WsLinkOptions.clock): playback runs on from a mark's report by its time. */
  readonly #now: () => number;
  /** A response is in progress (between `response.created` and `response.done`). */
  #responding = false;
  /** A response is wanted once none is in progress (tool outputs all in, or a reprompt). */
  #wantResponse = false;
  /** Tool calls not yet answered, and every call id seen lately. */
  readonly #pendingCalls = new Set<string>();
  readonly #seenCalls: string[] = [];

  constructor(call: BotCall, port: CallerPort, o: RealtimeBotOptions) {
    super(call, port, o);
    this.#o = o;
    const clock = o.clock ?? systemClock;
    this.#now = () => clock.now();
    this.#bytesPerMs = (o.format.rate / 1000) * (o.format.codec === 'slin' ? 2 : 1);
    this.#batch = new Uint8Array(Math.round(APPEND_MS * this.#bytesPerMs));
    this.start();
  }

  audio(data: Uint8Array): void {
    if (!this.connected) {
      this.hold(data);
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
    const mode = this.#o.dtmf ?? 'text';
    if (mode === 'ignore') return;
    this.#flush();
    this.#send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: `[DTMF ${digit}]` }] },
    });
    if (mode === 'respond') this.#send({ type: 'response.create' });
  }

  /** Asks the model to speak: a user text item and a response. */
  prompt(text: string): void {
    this.#flush();
    this.#send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    this.#wantResponse = true;
    this.#respondWhenFree();
  }

  /** One of our marks is reported played (a cleared one says nothing of what was heard). */
  mark(name: string, cleared: boolean): void {
    if (cleared) return;
    const m = /^vb:(\d+):(\d+)$/.exec(name);
    if (m === null) return;
    const item = this.#items.find((i) => i.n === Number(m[1]));
    if (item === undefined || item.cut) return;
    const ms = Number(m[2]);
    const k = item.marks.indexOf(ms);
    if (k >= 0) item.marks.splice(0, k + 1);
    item.heardMs = Math.max(item.heardMs, ms);
    item.heardAt = this.#now();
    item.started = true;
  }

  /** Ms of `itemId`'s audio the caller has heard by now (see the header); undefined for an unknown item. */
  heardMs(itemId: string): number | undefined {
    const item = this.#items.find((i) => i.id === itemId);
    return item === undefined ? undefined : this.#heard(item);
  }

  protected opened(): void {
    this.#batched = 0;
    const f = wireFormat(this.#o.format);
    const tools = this.#o.tools?.specs ?? [];
    const session: RT.RealtimeSessionCreateRequest = {
      type: 'realtime',
      ...(this.#o.model !== undefined && { model: this.#o.model }),
      ...(this.#o.instructions !== undefined && { instructions: this.#o.instructions }),
      output_modalities: ['audio'],
      audio: {
        input: { format: f, turn_detection: turnDetection(this.#o.turnDetection) },
        output: { format: f, ...(this.#o.voice !== undefined && { voice: this.#o.voice }) },
      },
      ...(tools.length > 0 && {
        tools: tools.map((t) => ({
          type: 'function' as const,
          name: t.name,
          description: t.description,
          parameters: t.parameters,
        })),
        tool_choice: 'auto' as const,
      }),
    };
    this.#send({ type: 'session.update', session });
  }

  protected received(data: Buffer, isBinary: boolean): void {
    if (isBinary)
      throw new BridgeError('unknown_event', 'a Realtime server sends JSON text events, not binary');
    let ev: { type?: unknown; [k: string]: unknown };
    try {
      ev = JSON.parse(data.toString('utf8'));
    } catch {
      throw new BridgeError('bad_json', 'an event from the Realtime server is not JSON');
    }
    if (ev === null || typeof ev !== 'object' || typeof ev.type !== 'string')
      throw new BridgeError('unknown_event', 'an event from the Realtime server has no type');
    switch (ev.type) {
      case 'response.output_audio.delta':
        this.#delta(ev as unknown as RT.ResponseAudioDeltaEvent);
        return;
      case 'input_audio_buffer.speech_started':
        this.#bargeIn();
        return;
      case 'response.function_call_arguments.done': {
        const e = ev as unknown as RT.ResponseFunctionCallArgumentsDoneEvent;
        this.#toolCall(e.call_id, e.name, e.arguments);
        return;
      }
      case 'response.created':
        this.#responding = true;
        return;
      case 'response.done': {
        this.#responding = false;
        const output = (ev as unknown as RT.ResponseDoneEvent).response?.output;
        if (Array.isArray(output))
          for (const item of output)
            if (item?.type === 'function_call') this.#toolCall(item.call_id, item.name, item.arguments);
        this.#respondWhenFree();
        return;
      }
      case 'error': {
        const e = (ev as unknown as RT.RealtimeErrorEvent).error;
        this.log.warn({ type: e?.type, code: e?.code, param: e?.param }, 'realtime server error event');
        return;
      }
      default:
        // The other server events (session.*, response.* bookkeeping, transcripts) need nothing here.
        return;
    }
  }

  protected farewell(): void {
    this.#flush();
  }

  #delta(ev: RT.ResponseAudioDeltaEvent): void {
    if (typeof ev.delta !== 'string' || typeof ev.item_id !== 'string')
      throw new BridgeError('invalid_field', 'response.output_audio.delta needs delta and item_id strings', {
        field: 'delta',
      });
    let audio: Uint8Array;
    try {
      audio = fromBase64(ev.delta);
    } catch {
      throw new BridgeError('bad_base64', 'response.output_audio.delta carries a delta that is not base64');
    }
    const pcm = this.#o.format.codec === 'slin';
    if (pcm && (audio.length & 1) !== 0)
      throw new BridgeError('odd_length', `PCM16 audio must be an even byte count, got ${audio.length}`);
    if (audio.length === 0) return;
    let item = this.#items.find((i) => i.id === ev.item_id);
    if (item === undefined) {
      item = {
        id: ev.item_id,
        n: ++this.#nextItem,
        sentMs: 0,
        marks: [],
        heardMs: 0,
        heardAt: 0,
        started: false,
        cut: false,
      };
      this.#items.push(item);
      if (this.#items.length > MAX_ITEMS) this.#items.shift();
      this.#placeMark(item, 0);
    }
    if (item.cut) return;
    this.port.audio(audio);
    item.sentMs += audio.length / this.#bytesPerMs;
    this.#placeMark(item, Math.floor(item.sentMs));
  }

  #placeMark(item: Item, ms: number): void {
    item.marks.push(ms);
    this.port.mark(`vb:${item.n}:${ms}`);
  }

  /** The model called a tool: run once per call id, answered with its output and, later, a response. */
  #toolCall(callId: unknown, name: unknown, args: unknown): void {
    const tools = this.#o.tools;
    if (typeof callId !== 'string' || typeof name !== 'string' || this.#seenCalls.includes(callId)) return;
    this.#seenCalls.push(callId);
    if (this.#seenCalls.length > MAX_SEEN_CALLS) this.#seenCalls.shift();
    if (tools === undefined) {
      this.#answer(callId, { error: 'not_found', message: 'this call has no tools' }, true);
      return;
    }
    this.#pendingCalls.add(callId);
    tools.call({ callId, name, arguments: args }, (output, respond) => this.#answer(callId, output, respond));
  }

  #answer(callId: string, output: ToolOutput, respond: boolean): void {
    this.#pendingCalls.delete(callId);
    this.#send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: callId, output: JSON.stringify(output) },
    });
    if (respond) this.#wantResponse = true;
    this.#respondWhenFree();
  }

  /** `response.create` once wanted, every tool call answered, and no response in progress. */
  #respondWhenFree(): void {
    if (!this.#wantResponse || this.#responding || this.#pendingCalls.size > 0) return;
    this.#wantResponse = false;
    // Counted as in progress at once: a second request before `response.created` would be refused.
    this.#responding = true;
    this.#send({ type: 'response.create' });
  }

  #heard(item: Item): number {
    if (!item.started) return 0;
    const next = item.marks.length > 0 ? item.marks[0]! : item.sentMs;
    const running = item.heardMs + (this.#now() - item.heardAt);
    return Math.max(0, Math.min(running, next, item.sentMs));
  }

  /** The caller spoke over the model: stop its audio and tell the server how much was heard. */
  #bargeIn(): void {
    const unheard = this.#items
      .filter((i) => !i.cut)
      .map((item) => ({ item, heard: Math.floor(this.#heard(item)) }))
      .filter(({ item, heard }) => heard < Math.floor(item.sentMs));
    if (unheard.length === 0) return; // nothing of the model's is playing
    this.port.clear();
    for (const { item, heard } of unheard) {
      item.cut = true;
      this.#send({
        type: 'conversation.item.truncate',
        item_id: item.id,
        content_index: 0,
        audio_end_ms: heard,
      });
      this.log.debug(
        { item: item.id, audio_end_ms: heard, sent_ms: Math.floor(item.sentMs) },
        'reply truncated',
      );
    }
  }

  #flush(): void {
    if (this.#batched === 0) return;
    this.#send({
      type: 'input_audio_buffer.append',
      audio: toBase64(this.#batch.subarray(0, this.#batched)),
    });
    this.#batched = 0;
  }

  #send(event: RT.RealtimeClientEvent): void {
    this.sendText(JSON.stringify(event));
  }
}

/**
 * A Realtime URL names its model: `?model=` (OpenAI's, and Azure OpenAI's GA path
 * `/openai/v1/realtime?model=<deployment>`), or `&deployment=` on Azure's older path. One given in the
 * settings is added as `model` when the URL names neither.
 */
export function realtimeUrl(url: string, model: string | undefined): string {
  if (model === undefined) return url;
  try {
    const u = new URL(url);
    if (!u.searchParams.has('model') && !u.searchParams.has('deployment')) u.searchParams.set('model', model);
    return u.toString();
  } catch {
    return url;
  }
}

/** A host of Azure's (`<resource>.openai.azure.com`, `<resource>.cognitiveservices.azure.com`, ...). */
export function isAzureHost(url: string): boolean {
  try {
    return new URL(url).hostname.endsWith('.azure.com');
  } catch {
    return false;
  }
}

/** The key as the server takes it: Azure's `api-key` header on an Azure host, else a bearer token. */
export function keyHeaders(url: string, apiKey: string): Readonly<Record<string, string>> {
  return isAzureHost(url) ? { 'api-key': apiKey } : { authorization: `Bearer ${apiKey}` };
}

/** The `openai-realtime` dialect (src/dialects/bot/openai-realtime.ts): a client of a Realtime server. */
export const openaiRealtimeBot: BotDialect = {
  decl: openaiRealtime,
  format: (_settings, caller) => realtimeFormat(caller),
  create: (call, port, { link, settings, format, tools }) =>
    new OpenAIRealtimeBot(call, port, {
      ...link,
      url: realtimeUrl(link.url, settings.model),
      ...(settings.apiKey !== undefined && { headers: keyHeaders(link.url, settings.apiKey) }),
      format,
      model: settings.model,
      instructions: settings.instructions,
      voice: settings.voice,
      turnDetection: settings.turnDetection,
      dtmf: settings.dtmf,
      tools,
    }),
};
