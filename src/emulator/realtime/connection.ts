/**
 * One client connection: the session, the input audio buffer and its VAD, the conversation's items and
 * the response in progress. Each client event is recorded, handled, and answered with the server
 * events the GA interface defines, or with an `error` event (the session goes on).
 *
 * Tools: the model calls one of the session's declared tools when told to (tool-script.ts:
 * `tool=<name>{json}` in the instructions, one per caller turn, in order; or `callTool`, the control
 * API's `POST .../tool-call`), after speaking `reply_ms` (or `speak_ms`). A `function_call_output` item
 * is recorded, and the response the client then asks for is a plain reply.
 */
import type { WebSocket } from 'ws';
import { replyMsFrom, replyToneHz } from '../s2s/voice.js';
import { decodeAudio, formatInfo } from './audio-io.js';
import { Conversation } from './conversation.js';
import {
  type ConversationItem,
  invalidValue,
  isObject,
  missingParameter,
  newId,
  type Outgoing,
  RealtimeRequestError,
  type SessionConfig,
} from './events.js';
import { type MalformedKind, sendMalformed } from './faults.js';
import { InputBuffer } from './input.js';
import { SessionRecord } from './record.js';
import { type PlannedToolCall, ResponseStream, type StreamTiming } from './response.js';
import { applySessionUpdate, defaultSession } from './session-config.js';
import { type ScriptedToolCall, scriptedToolCalls } from './tool-script.js';

export interface ConnectionOptions extends StreamTiming {
  /** Reply length when the instructions do not set one. */
  readonly replyMs: number;
}

export const CLIENT_EVENT_TYPES = [
  'session.update',
  'input_audio_buffer.append',
  'input_audio_buffer.commit',
  'input_audio_buffer.clear',
  'conversation.item.create',
  'conversation.item.retrieve',
  'conversation.item.truncate',
  'conversation.item.delete',
  'response.create',
  'response.cancel',
  'output_audio_buffer.clear',
] as const;

export class RealtimeConnection {
  readonly record: SessionRecord;
  private session: SessionConfig;
  private readonly input: InputBuffer;
  private readonly conversationId = newId('conv');
  private readonly conversation = new Conversation();
  private response: ResponseStream | undefined;
  private replies = 0;
  /** The instructions' scripted tool calls, and how many have been made. */
  private scripted: ScriptedToolCall[] = [];
  private scriptedMade = 0;
  /** A function_call_output came since the last response: the next one answers it, calling nothing. */
  private answering = false;

  constructor(
    private readonly ws: WebSocket,
    model: string,
    private readonly options: ConnectionOptions,
  ) {
    this.session = defaultSession(model);
    this.record = new SessionRecord(newId('sess'), model);
    this.input = new InputBuffer(formatInfo(this.session.audio?.input?.format), this.turnDetection());
    this.send({ type: 'session.created', session: this.sessionView() });
  }

  private turnDetection() {
    return this.session.audio?.input?.turn_detection ?? null;
  }

  private sessionView(): SessionConfig {
    return { ...this.session, id: this.record.id, object: 'realtime.session' } as SessionConfig;
  }

  send(event: Outgoing): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sent.push(event.type);
    this.ws.send(JSON.stringify({ event_id: newId('event'), ...event }));
  }

  private sendError(err: RealtimeRequestError, clientEventId: unknown): void {
    const event_id = typeof clientEventId === 'string' ? clientEventId : null;
    this.send({
      type: 'error',
      error: { type: err.type, code: err.code, message: err.message, param: err.param, event_id },
    });
  }

  /** A frame from the client: parsed, recorded, handled; anything wrong is answered with `error`. */
  onFrame(data: Buffer, isBinary: boolean): void {
    let event: unknown;
    try {
      if (isBinary)
        throw new RealtimeRequestError(
          'invalid_value',
          'Binary frames are not supported; send JSON text frames.',
        );
      try {
        event = JSON.parse(data.toString('utf8'));
      } catch (err) {
        throw new RealtimeRequestError(
          'invalid_json',
          `The frame is not valid JSON: ${(err as Error).message}`,
        );
      }
      if (!isObject(event))
        throw new RealtimeRequestError('invalid_type', 'A client event must be a JSON object.');
      if (event.type === undefined) throw missingParameter('type');
      this.record.event(String(event.type), event);
      this.handle(event);
    } catch (err) {
      if (!(err instanceof RealtimeRequestError)) throw err;
      this.sendError(err, isObject(event) ? event.event_id : undefined);
    }
  }

  /** Each client event type's handler. */
  private readonly handlers: Record<
    (typeof CLIENT_EVENT_TYPES)[number],
    (e: Record<string, unknown>) => void
  > = {
    'session.update': (e) => this.sessionUpdate(e.session),
    'input_audio_buffer.append': (e) => this.append(e.audio),
    'input_audio_buffer.commit': () => this.commit(),
    'input_audio_buffer.clear': () => {
      this.input.clear(this.turnDetection());
      this.send({ type: 'input_audio_buffer.cleared' });
    },
    'conversation.item.create': (e) => this.itemCreate(e.item, e.previous_item_id),
    'conversation.item.retrieve': (e) =>
      this.send({ type: 'conversation.item.retrieved', item: this.conversation.get(e.item_id) }),
    'conversation.item.delete': (e) =>
      this.send({ type: 'conversation.item.deleted', item_id: this.conversation.delete(e.item_id) }),
    'conversation.item.truncate': (e) => this.truncate(e),
    'response.create': (e) => this.responseCreate(e.response),
    'response.cancel': () => {
      if (this.response?.active !== true) {
        throw new RealtimeRequestError(
          'response_cancel_not_active',
          'Cancellation failed: no active response found.',
        );
      }
      this.response.cancel('client_cancelled');
    },
    'output_audio_buffer.clear': () => {
      throw new RealtimeRequestError(
        'invalid_value',
        'output_audio_buffer.clear is only supported for WebRTC and SIP sessions.',
        'type',
      );
    },
  };

  private handle(e: Record<string, unknown>): void {
    const handler = (CLIENT_EVENT_TYPES as readonly unknown[]).includes(e.type)
      ? this.handlers[e.type as (typeof CLIENT_EVENT_TYPES)[number]]
      : undefined;
    if (handler === undefined) throw invalidValue('type', e.type, CLIENT_EVENT_TYPES);
    handler(e);
  }

  private sessionUpdate(update: unknown): void {
    this.session = applySessionUpdate(this.session, update);
    this.scripted = scriptedToolCalls(this.session.instructions);
    this.input.configure(formatInfo(this.session.audio?.input?.format), this.turnDetection());
    this.send({ type: 'session.updated', session: this.sessionView() });
  }

  private append(audio: unknown): void {
    const pcm = decodeAudio(audio, this.input.format);
    this.record.audio(this.input.format.name, this.input.format.rate, pcm);
    for (const v of this.input.append(pcm, this.turnDetection() !== null)) {
      if (v.kind === 'start') this.speechStarted(v.ms);
      else this.speechStopped(v.ms);
    }
  }

  /** Speech began, from the VAD or a control hook: a new user item, and a barge-in on the reply. */
  speechStarted(audioStartMs = this.input.nowMs, forced = false): void {
    const item_id = this.input.speechStarted(forced);
    this.send({ type: 'input_audio_buffer.speech_started', audio_start_ms: audioStartMs, item_id });
    const td = this.turnDetection();
    if (td?.interrupt_response !== false && this.response?.active === true)
      this.response.cancel('turn_detected');
  }

  private speechStopped(ms: number): void {
    const itemId = this.input.commit();
    this.send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: ms, item_id: itemId });
    this.commitItem(itemId);
    if (this.turnDetection()?.create_response !== false && this.response?.active !== true) {
      this.startResponse(undefined);
    }
  }

  private commit(): void {
    const ms = this.input.bufferedMs;
    if (ms < 100) {
      throw new RealtimeRequestError(
        'input_audio_buffer_commit_empty',
        `Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has ${ms.toFixed(2)}ms of audio.`,
      );
    }
    this.commitItem(this.input.commit());
  }

  private commitItem(itemId: string): void {
    const previous = this.conversation.last;
    this.send({ type: 'input_audio_buffer.committed', item_id: itemId, previous_item_id: previous });
    const item: ConversationItem = {
      id: itemId,
      object: 'realtime.item',
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_audio', transcript: null as unknown as string }],
    };
    this.addItem(item, previous);
  }

  private addItem(item: ConversationItem, previous: string | null): void {
    this.conversation.add(item);
    this.send({ type: 'conversation.item.added', previous_item_id: previous, item });
    this.send({ type: 'conversation.item.done', previous_item_id: previous, item });
  }

  private itemCreate(item: unknown, previous: unknown): void {
    if (item === undefined) throw missingParameter('item');
    if (!isObject(item))
      throw new RealtimeRequestError('invalid_type', "Invalid type for 'item': expected an object.", 'item');
    const types = ['message', 'function_call', 'function_call_output'];
    if (!types.includes(item.type as string)) throw invalidValue('item.type', item.type, types);
    if (item.type === 'message' && !['user', 'assistant', 'system'].includes(item.role as string))
      throw invalidValue('item.role', item.role, ['user', 'assistant', 'system']);
    if (previous !== undefined && previous !== 'root') this.conversation.get(previous);
    const id = typeof item.id === 'string' ? item.id : newId('item');
    if (item.type === 'function_call_output') {
      if (typeof item.call_id !== 'string') throw missingParameter('item.call_id');
      if (typeof item.output !== 'string')
        throw new RealtimeRequestError(
          'invalid_type',
          "Invalid type for 'item.output': expected a string.",
          'item.output',
        );
      this.record.toolOutputs.push({
        at_ms: this.record.nowMs(),
        call_id: item.call_id,
        output: item.output,
      });
      this.answering = true;
    }
    const full = { ...item, id, object: 'realtime.item', status: 'completed' } as ConversationItem;
    this.addItem(full, typeof previous === 'string' ? previous : this.conversation.last);
  }

  private truncate(e: Record<string, unknown>): void {
    const base = {
      at_ms: this.record.nowMs(),
      item_id: e.item_id,
      content_index: e.content_index,
      audio_end_ms: e.audio_end_ms,
    };
    const itemAudioMs = this.conversation.audioMs(e.item_id);
    try {
      const end = this.conversation.truncate(e.item_id, e.content_index, e.audio_end_ms);
      this.record.truncates.push({ ...base, item_audio_ms: itemAudioMs, accepted: true });
      this.send({
        type: 'conversation.item.truncated',
        item_id: e.item_id as string,
        content_index: 0,
        audio_end_ms: end,
      });
    } catch (err) {
      this.record.truncates.push({
        ...base,
        item_audio_ms: itemAudioMs,
        accepted: false,
        error: (err as Error).message,
      });
      throw err;
    }
  }

  private responseCreate(params: unknown): void {
    if (this.response?.active === true) {
      throw new RealtimeRequestError(
        'conversation_already_has_active_response',
        `Conversation already has an active response in progress: ${this.response.id}. Wait until the response is finished before creating a new one.`,
      );
    }
    if (params !== undefined && !isObject(params))
      throw new RealtimeRequestError(
        'invalid_type',
        "Invalid type for 'response': expected an object.",
        'response',
      );
    const instructions = params?.instructions;
    this.startResponse(typeof instructions === 'string' ? instructions : undefined);
  }

  /** The names of the session's declared function tools. */
  private declaredTools(): string[] {
    return (this.session.tools ?? []).flatMap((t) =>
      isObject(t) && t.type === 'function' && typeof t.name === 'string' ? [t.name] : [],
    );
  }

  /**
   * The model calls `name` now (a control hook): a response that speaks `speakMs` of its tone, then calls
   * the tool. Refused while a response is in progress, or for a tool the session has not declared.
   */
  callTool(
    name: string,
    args: unknown,
    speakMs = 0,
    callId = newId('item').replace('item_', 'call_'),
  ): string {
    if (this.response?.active === true)
      throw new RealtimeRequestError(
        'conversation_already_has_active_response',
        'A response is in progress.',
      );
    if (!this.declaredTools().includes(name))
      throw new RealtimeRequestError(
        'invalid_value',
        `The session declares no tool named '${name}' (declared: ${this.declaredTools().join(', ') || 'none'}).`,
      );
    this.startResponse(
      undefined,
      { itemId: newId('item'), callId, name, arguments: JSON.stringify(args ?? {}) },
      speakMs,
    );
    return callId;
  }

  /** The next scripted call for a response to the caller's turn, if one is left and declared. */
  private nextScripted(): PlannedToolCall | undefined {
    const answering = this.answering;
    this.answering = false;
    if (answering || this.scriptedMade >= this.scripted.length) return undefined;
    const s = this.scripted[this.scriptedMade++]!;
    if (!this.declaredTools().includes(s.name)) return undefined;
    return {
      itemId: newId('item'),
      callId: newId('item').replace('item_', 'call_'),
      name: s.name,
      arguments: JSON.stringify(s.arguments),
    };
  }

  private startResponse(instructions: string | undefined, call?: PlannedToolCall, speakMs?: number): void {
    const toolCall = call ?? this.nextScripted();
    const replyMs =
      speakMs ?? replyMsFrom(instructions) ?? replyMsFrom(this.session.instructions) ?? this.options.replyMs;
    const format = formatInfo(this.session.audio?.output?.format);
    const hz = replyToneHz(this.replies++);
    const voice = this.session.audio?.output?.voice;
    const modality = this.session.output_modalities?.[0] === 'text' ? 'text' : 'audio';
    const plan = {
      id: newId('resp'),
      itemId: newId('item'),
      previousItemId: this.conversation.last,
      conversationId: this.conversationId,
      hz,
      replyMs,
      format,
      voice: typeof voice === 'string' ? voice : (voice?.id ?? 'marin'),
      modality,
      ...(toolCall !== undefined && { toolCall }),
    } as const;
    const rec = {
      id: plan.id,
      item_id: plan.itemId,
      tone_hz: hz,
      format: format.name,
      planned_ms: replyMs,
      sent_ms: 0,
      status: 'in_progress' as const,
    };
    this.record.responses.push(rec);
    this.conversation.add(
      { id: plan.itemId, type: 'message', role: 'assistant', content: [] },
      modality === 'audio' ? rec : undefined,
    );
    const stream = new ResponseStream(
      plan,
      (ev) => this.send(ev),
      () => this.ws.bufferedAmount,
      this.options,
      rec,
      (item) => this.conversation.update(item),
      (item) => {
        this.conversation.add(item);
        if (item.type === 'function_call')
          this.record.toolCalls.push({
            at_ms: this.record.nowMs(),
            call_id: item.call_id!,
            name: item.name!,
            arguments: item.arguments!,
          });
      },
    );
    this.response = stream;
    stream.start();
  }

  /** Closes the socket from the server's side (a control hook). */
  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  sendMalformed(kind: MalformedKind): void {
    if (this.ws.readyState === this.ws.OPEN) sendMalformed(this.ws, kind);
  }

  /** The connection closed: stop the reply. */
  closed(code: number): void {
    this.response?.dispose();
    this.record.closed_at = new Date().toISOString();
    this.record.close_code = code;
  }
}
