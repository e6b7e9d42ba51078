/**
 * One connection to the Deepgram Voice Agent stand-in, speaking `/v1/agent/converse` as @deepgram/sdk's
 * agent socket and Deepgram's documents describe it:
 * - `Welcome {request_id}` on connect; the client's `Settings` (settings.ts) is answered with
 *   `SettingsApplied` after `settingsDelayMs`; audio before that is noted and dropped;
 * - caller audio: binary frames in `audio.input`'s encoding and rate, recorded and fed to the energy VAD;
 *   each utterance brings `UserStartedSpeaking` (the barge-in signal: a reply still playing stops, and
 *   `lateAudioChunks` more of its chunks follow, as audio a server had in flight) and, once it ends,
 *   `ConversationText {role: "user"}`;
 * - the agent's turn: `ConversationText {role: "assistant"}`, `AgentStartedSpeaking`, binary audio in
 *   `audio.output`'s format (a tone), `AgentAudioDone` once all is sent; `agent.greeting` speaks first;
 * - text: `InjectUserMessage {content}` is recorded (DTMF arrives this way) and answered after any reply
 *   in progress; `InjectAgentMessage` is spoken, or refused (`InjectionRefused`) mid-turn unless its
 *   `behavior` says to queue or interrupt;
 * - tools: a client-side function of `agent.think.functions` (scripted by `call_tool=NAME` in the prompt
 *   or a user text, or the control hook, which may have the agent speak `speak_ms` first and call once
 *   that audio is all sent) goes as `FunctionCallRequest {functions: [{id, name, arguments (a JSON
 *   string), client_side: true}]}`; the client's `FunctionCallResponse {id, name, content}` is recorded
 *   and, once no call is pending, the agent speaks. `UserStartedSpeaking` cancels the calls pending, as
 *   Deepgram does on a resumed turn or a barge-in: `FunctionCallCancelled {functions: [{id, name}]}`,
 *   after which an answer to one of them is a fault;
 * - keep-alive and limits: with no client message (audio, `KeepAlive` or other) for `idleTimeoutMs` the
 *   server sends `Error {code: "CLIENT_MESSAGE_TIMEOUT"}` and closes (1011); a session ends at
 *   `maxSessionMs` (two hours at Deepgram);
 * - bad client JSON gets `Error {code: "UNPARSABLE_CLIENT_MESSAGE"}` and is noted; the session goes on.
 */
import { randomUUID } from 'node:crypto';
import type { agent } from '@deepgram/sdk';
import type { WebSocket } from 'ws';
import { decodeInto, encodeInto } from '../../audio/codec.js';
import type { Codec } from '../../audio/format.js';
import { type MalformedKind, OVERSIZED_BYTES, type StandInConnection } from '../s2s/connection.js';
import { type ReplyRecord, StandInRecord } from '../s2s/record.js';
import { ReplyStream } from '../s2s/reply.js';
import { type ScriptedCall, scriptedToolCall } from '../s2s/script.js';
import { EnergyVad } from '../s2s/vad.js';
import { replyMsFrom, replyToneHz } from '../s2s/voice.js';
import { type AgentSettings, type AudioFormat, parseSettings, SettingsError } from './settings.js';

export interface AgentOptions {
  readonly replyMs: number;
  /** Audio per binary frame, in ms. */
  readonly chunkMs: number;
  /** How many times faster than real time the agent's audio goes out; 0: as fast as the socket takes. */
  readonly outputRateFactor: number;
  /** Audio each reply keeps ahead of its pace, ms (a client's playback buffer); 0 when absent. */
  readonly leadMs?: number;
  readonly turnSilenceMs: number;
  readonly settingsDelayMs: number;
  /** No client message for this long closes the socket (Deepgram: about 10 s); 0: never. */
  readonly idleTimeoutMs: number;
  readonly maxSessionMs: number;
  /**
   * Chunks of an interrupted reply sent after `UserStartedSpeaking` (audio a server had in flight when
   * it interrupted), before the next turn's messages; 0: none.
   */
  readonly lateAudioChunks: number;
}

type ServerMessage =
  | agent.AgentV1Welcome
  | agent.AgentV1SettingsApplied
  | agent.AgentV1ConversationText
  | agent.AgentV1UserStartedSpeaking
  | agent.AgentV1AgentThinking
  | agent.AgentV1AgentStartedSpeaking
  | agent.AgentV1AgentAudioDone
  | agent.AgentV1FunctionCallRequest
  | agent.AgentV1FunctionCallCancelled
  | agent.AgentV1InjectionRefused
  | agent.AgentV1PromptUpdated
  | agent.AgentV1Error
  | agent.AgentV1Warning;

export const CLIENT_MESSAGE_TYPES = [
  'Settings',
  'UpdatePrompt',
  'UpdateSpeak',
  'UpdateThink',
  'UpdateListen',
  'InjectUserMessage',
  'InjectAgentMessage',
  'FunctionCallResponse',
  'KeepAlive',
] as const;

const CODEC: Record<AudioFormat['encoding'], Codec> = { linear16: 'slin', mulaw: 'pcmu', alaw: 'pcma' };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the stand-in records of a Deepgram connection beyond the shared record. */
export class AgentRecord extends StandInRecord {
  /** How the handshake carried the key (`Authorization: Token`, `Bearer`, or the subprotocols). */
  key_via: 'token' | 'bearer' | 'subprotocol' | null = null;
  keepalives = 0;
  settings: unknown = null;
  readonly errors: { at_ms: number; code: string; description: string }[] = [];
  /** Client-side calls withdrawn by `FunctionCallCancelled`. */
  readonly cancelled_calls: { at_ms: number; id: string; name: string }[] = [];

  override summary(): Record<string, unknown> {
    return {
      ...super.summary(),
      key_via: this.key_via,
      keepalives: this.keepalives,
      errors: this.errors,
      cancelled_calls: this.cancelled_calls,
    };
  }

  override detail(): Record<string, unknown> {
    return { ...super.detail(), settings: this.settings };
  }
}

export class DeepgramAgentConnection implements StandInConnection {
  readonly record: AgentRecord;
  private settings: AgentSettings | null = null;
  private applied = false;
  private vad: EnergyVad | null = null;
  private speechFromMs = 0;
  private reply: ReplyStream | undefined;
  private replies = 0;
  private scriptDone = false;
  /** A reply asked for while one plays (an injected user text): it follows. */
  private queued: { ms: number; text: string | undefined } | undefined;
  private readonly pendingTools = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly options: AgentOptions,
  ) {
    this.record = new AgentRecord(randomUUID(), 'v1/agent/converse');
    this.send({ type: 'Welcome', request_id: this.record.id });
    this.touch();
    if (options.maxSessionMs > 0)
      this.after(options.maxSessionMs, () => this.close(1000, 'maximum session length reached'));
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  /** A client message arrived: the idle clock starts again. */
  private touch(): void {
    if (this.options.idleTimeoutMs <= 0) return;
    if (this.idleTimer !== undefined) this.idleTimer.refresh();
    else
      this.idleTimer = this.after(this.options.idleTimeoutMs, () => {
        this.error(
          'CLIENT_MESSAGE_TIMEOUT',
          "We waited too long for a websocket message. Please ensure that you're sending binary messages containing user speech.",
        );
        this.close(1011, 'client message timeout');
      });
  }

  private send(m: ServerMessage): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sentType(m.type);
    this.ws.send(JSON.stringify(m));
  }

  private error(code: string, description: string): void {
    this.record.errors.push({ at_ms: this.record.nowMs(), code, description });
    this.send({ type: 'Error', code, description });
  }

  onFrame(data: Buffer, isBinary: boolean): void {
    if (this.record.closed_by !== null) return;
    this.touch();
    if (isBinary) {
      this.audio(data);
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      this.record.message('invalid_json', { bytes: data.length });
      this.record.note('a text frame that is not JSON');
      this.error('UNPARSABLE_CLIENT_MESSAGE', 'The message could not be parsed as JSON.');
      return;
    }
    const type = isObject(msg) ? msg.type : undefined;
    this.record.message(typeof type === 'string' ? type : '(none)', msg);
    if (!isObject(msg) || !(CLIENT_MESSAGE_TYPES as readonly unknown[]).includes(type)) {
      this.record.note(`a message of unknown type ${JSON.stringify(type)}`);
      this.error('UNPARSABLE_CLIENT_MESSAGE', `Unknown message type ${JSON.stringify(type)}.`);
      return;
    }
    if (type !== 'Settings' && type !== 'KeepAlive' && !this.applied)
      this.record.note(`${type} sent before SettingsApplied`);
    switch (type as (typeof CLIENT_MESSAGE_TYPES)[number]) {
      case 'Settings':
        this.onSettings(msg);
        return;
      case 'KeepAlive':
        this.record.keepalives++;
        return;
      case 'InjectUserMessage':
        this.injectUser(msg.content);
        return;
      case 'InjectAgentMessage':
        this.injectAgent(msg);
        return;
      case 'FunctionCallResponse':
        this.functionCallResponse(msg);
        return;
      case 'UpdatePrompt':
        if (typeof msg.prompt !== 'string')
          this.error('UNPARSABLE_CLIENT_MESSAGE', 'UpdatePrompt.prompt must be a string.');
        else if (this.settings !== null) {
          this.settings = { ...this.settings, prompt: `${this.settings.prompt}\n${msg.prompt}` };
          this.send({ type: 'PromptUpdated' });
        }
        return;
      default:
        // UpdateSpeak, UpdateThink, UpdateListen: taken without effect on a tone voice.
        return;
    }
  }

  private onSettings(msg: Record<string, unknown>): void {
    if (this.settings !== null) {
      this.record.note('a second Settings message');
      this.send({
        type: 'Warning',
        code: 'SETTINGS_ALREADY_APPLIED',
        description: 'Settings can be sent once; use the Update messages.',
      });
      return;
    }
    try {
      this.settings = parseSettings(msg);
    } catch (err) {
      if (!(err instanceof SettingsError)) throw err;
      this.record.note(`Settings: ${err.message}`);
      this.error('UNPARSABLE_CLIENT_MESSAGE', `Settings: ${err.message}`);
      return;
    }
    this.record.settings = msg;
    const settings = this.settings;
    this.after(this.options.settingsDelayMs, () => {
      this.applied = true;
      this.send({ type: 'SettingsApplied' });
      if (settings.greeting !== null)
        this.startReply(replyMsFrom(settings.greeting) ?? this.options.replyMs, settings.greeting);
    });
  }

  private audio(data: Buffer): void {
    this.record.message('audio', { bytes: data.length });
    const settings = this.settings;
    if (settings === null || !this.applied) {
      this.record.note('audio sent before SettingsApplied');
      return;
    }
    const { encoding, sampleRate } = settings.input;
    const codec = CODEC[encoding];
    if (codec === 'slin' && (data.length & 1) !== 0)
      this.record.note(`linear16 audio must be whole 16-bit samples, got a frame of ${data.length} bytes`);
    const pcm = new Int16Array(codec === 'slin' ? data.length >> 1 : data.length);
    decodeInto(codec, codec === 'slin' ? data.subarray(0, pcm.length * 2) : data, pcm);
    this.record.audio(`${encoding};rate=${sampleRate}`, sampleRate, pcm);
    this.vad ??= new EnergyVad(sampleRate, {
      thresholdDbfs: -40,
      silenceMs: this.options.turnSilenceMs,
      prefixPaddingMs: 0,
    });
    for (const v of this.vad.push(pcm)) {
      if (v.kind === 'start') this.userStartedSpeaking(v.ms);
      else this.userStopped(v.ms - this.speechFromMs);
    }
  }

  private speaking(): boolean {
    const r = this.reply;
    return r !== undefined && (r.active || performance.now() < r.audibleUntil());
  }

  /** The barge-in signal: sent for every utterance; a reply still playing stops. */
  private userStartedSpeaking(ms: number): void {
    this.speechFromMs = ms;
    this.queued = undefined;
    this.send({ type: 'UserStartedSpeaking' });
    this.cancelPendingCalls();
    if (!this.speaking()) return;
    this.reply!.stop('interrupted');
    if (this.options.lateAudioChunks > 0) this.reply!.emitLate(this.options.lateAudioChunks);
    // The client was told to drop what it holds of the reply: the agent is silent now, and the
    // caller's next turn is answered when it ends, not queued behind audio no one will play.
    this.reply = undefined;
    this.record.interruptions.push({ at_ms: this.record.nowMs(), turn: null });
  }

  private userStopped(heardMs: number): void {
    this.send({ type: 'ConversationText', role: 'user', content: `(speech of ${heardMs} ms)` });
    this.userTurn(undefined);
  }

  /** The user's turn is over: a scripted function call, or the agent speaks. */
  private userTurn(text: string | undefined): void {
    if (this.pendingTools.size > 0) return;
    const prompt = this.settings?.prompt;
    const fromText = scriptedToolCall(text);
    const fromPrompt = this.scriptDone ? undefined : scriptedToolCall(prompt);
    const script = fromText ?? fromPrompt;
    if (script !== undefined) {
      if (script === fromPrompt) this.scriptDone = true;
      if (this.callScripted(script)) return;
    }
    const ms = replyMsFrom(text) ?? replyMsFrom(prompt) ?? this.options.replyMs;
    if (this.speaking()) this.queued = { ms, text: undefined };
    else this.startReply(ms, undefined);
  }

  private callScripted(script: ScriptedCall): boolean {
    try {
      this.callTool(script.name, script.args);
      return true;
    } catch (err) {
      this.record.note(`call_tool=${script.name}: ${(err as Error).message}`);
      return false;
    }
  }

  private injectUser(content: unknown): void {
    if (typeof content !== 'string') {
      this.record.note('InjectUserMessage.content must be a string');
      this.error('UNPARSABLE_CLIENT_MESSAGE', 'InjectUserMessage.content must be a string.');
      return;
    }
    this.record.texts.push({ at_ms: this.record.nowMs(), type: 'InjectUserMessage', text: content });
    this.send({ type: 'ConversationText', role: 'user', content });
    this.userTurn(content);
  }

  private injectAgent(msg: Record<string, unknown>): void {
    const message = msg.message;
    if (typeof message !== 'string') {
      this.error('UNPARSABLE_CLIENT_MESSAGE', 'InjectAgentMessage.message must be a string.');
      return;
    }
    const behavior = msg.behavior ?? 'default';
    const busy = this.speaking() || this.vad?.inSpeech === true;
    const ms = replyMsFrom(message) ?? this.options.replyMs;
    if (behavior === 'interrupt' && this.speaking()) this.reply!.stop('interrupted');
    else if (behavior === 'queue' && this.speaking()) {
      this.queued = { ms, text: message };
      return;
    } else if (busy && behavior !== 'interrupt') {
      this.send({ type: 'InjectionRefused', message: 'The agent or the user is speaking.' });
      return;
    }
    this.startReply(ms, message);
  }

  /** Speaks a reply of `ms`; `then` runs once its audio is all sent (not when it is cut). */
  private startReply(ms: number, text: string | undefined, then?: () => void): void {
    const output = this.settings!.output;
    this.reply?.stop('stopped');
    const index = this.replies++;
    const rec: ReplyRecord = {
      id: index + 1,
      turn: null,
      tone_hz: replyToneHz(index),
      format: `${output.encoding};rate=${output.sampleRate}`,
      rate: output.sampleRate,
      planned_ms: ms,
      started_at_ms: this.record.nowMs(),
      sent_ms: 0,
      late_ms: 0,
      status: 'in_progress',
      ended_at_ms: null,
    };
    this.record.replies.push(rec);
    const codec = CODEC[output.encoding];
    const stream: ReplyStream = new ReplyStream(
      rec,
      {
        chunkMs: this.options.chunkMs,
        rateFactor: this.options.outputRateFactor,
        leadMs: this.options.leadMs ?? 0,
      },
      (pcm) => {
        if (this.ws.readyState !== this.ws.OPEN) return;
        const out = new Uint8Array(codec === 'slin' ? pcm.length * 2 : pcm.length);
        encodeInto(codec, pcm, out);
        this.record.sentType('audio');
        this.ws.send(out, { binary: true });
      },
      () => this.ws.bufferedAmount,
      () => {
        this.send({ type: 'AgentAudioDone' });
        then?.();
        this.after(Math.max(0, stream.audibleUntil() - performance.now()), () => {
          if (this.reply !== stream) return;
          const next = this.queued;
          this.queued = undefined;
          if (next !== undefined) this.startReply(next.ms, next.text);
        });
      },
    );
    this.reply = stream;
    this.send({ type: 'ConversationText', role: 'assistant', content: text ?? stream.transcript() });
    this.send({ type: 'AgentStartedSpeaking', total_latency: 0.05, tts_latency: 0.02, ttt_latency: 0.03 });
    stream.start();
  }

  /**
   * The agent calls `name` (a client-side function of the settings): at once, or once a reply of
   * `speakMs` is all sent. Returns the call's id; throws when it cannot be called.
   */
  callTool(name: string, parameters: Record<string, unknown>, speakMs = 0): string {
    if (this.ws.readyState !== this.ws.OPEN) throw new Error('the connection is closed');
    if (this.settings === null || !this.applied) throw new Error('the settings are not applied yet');
    const fn = this.settings.functions.get(name);
    if (fn === undefined) {
      const names = [...this.settings.functions.keys()];
      throw new Error(
        `${name} is not in agent.think.functions (${names.length === 0 ? 'none' : names.join(', ')})`,
      );
    }
    if (!fn.clientSide) throw new Error(`${name} has an endpoint: the server would call it, not the client`);
    const id = randomUUID();
    const call = () => {
      if (this.ws.readyState !== this.ws.OPEN) return;
      this.pendingTools.set(id, name);
      this.record.tool_calls.push({
        at_ms: this.record.nowMs(),
        id,
        name,
        parameters,
        answered_at_ms: null,
        answer: null,
      });
      this.send({ type: 'AgentThinking', content: `Calling ${name}.` });
      this.send({
        type: 'FunctionCallRequest',
        functions: [{ id, name, arguments: JSON.stringify(parameters), client_side: true }],
      });
    };
    if (speakMs > 0) this.startReply(speakMs, undefined, call);
    else call();
    return id;
  }

  /** The caller spoke again: the calls pending are withdrawn, and the client told which. */
  private cancelPendingCalls(): void {
    if (this.pendingTools.size === 0) return;
    const functions = [...this.pendingTools].map(([id, name]) => ({ id, name }));
    this.pendingTools.clear();
    for (const f of functions) this.record.cancelled_calls.push({ at_ms: this.record.nowMs(), ...f });
    this.send({ type: 'FunctionCallCancelled', functions });
  }

  private functionCallResponse(msg: Record<string, unknown>): void {
    const id = typeof msg.id === 'string' ? msg.id : '';
    const call = this.record.tool_calls.find((c) => c.id === id);
    if (call === undefined || !this.pendingTools.has(id)) {
      const what =
        call === undefined
          ? 'an unknown'
          : this.record.cancelled_calls.some((c) => c.id === id)
            ? 'a cancelled'
            : 'an answered';
      this.record.note(`FunctionCallResponse for ${what} id ${JSON.stringify(msg.id)}`);
      return;
    }
    if (msg.name !== call.name)
      this.record.note(
        `FunctionCallResponse for ${id} names ${JSON.stringify(msg.name)}, the call was ${call.name}`,
      );
    if (typeof msg.content !== 'string')
      this.record.note(`FunctionCallResponse.content must be a string, got ${typeof msg.content}`);
    this.pendingTools.delete(id);
    call.answered_at_ms = this.record.nowMs();
    call.answer = msg;
    if (this.pendingTools.size === 0)
      this.startReply(replyMsFrom(this.settings?.prompt) ?? this.options.replyMs, undefined);
  }

  speechStarted(): void {
    this.vad?.forceStart();
    this.userStartedSpeaking(this.vad?.nowMs ?? this.record.nowMs());
  }

  sendMalformed(kind: MalformedKind): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sentType(`malformed:${kind}`);
    if (kind === 'binary' || kind === 'oversized') {
      // An odd byte count for linear16 audio, or one frame far past anything the server sends.
      this.ws.send(Buffer.alloc(kind === 'binary' ? 3 : OVERSIZED_BYTES), { binary: true });
      return;
    }
    const frames: Record<'json' | 'unknown_event' | 'no_type', string> = {
      json: '{"type":"ConversationText","role":',
      unknown_event: JSON.stringify({ type: 'StandInUnknownMessage' }),
      no_type: JSON.stringify({ role: 'assistant', content: 'no type' }),
    };
    this.ws.send(frames[kind]);
  }

  close(code: number, reason: string): void {
    if (this.record.closed_by === null) this.record.closed_by = 'server';
    this.ws.close(code, reason);
  }

  closed(code: number, reason: string): void {
    this.reply?.stop('stopped');
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.record.closed_by === null) this.record.closed_by = 'client';
    this.record.closed_at = new Date().toISOString();
    this.record.close_code = code;
    this.record.close_reason = reason;
  }
}
