/**
 * One joined call on the Ultravox stand-in, speaking the `serverWebSocket` medium as Ultravox documents it:
 * - audio: binary frames of PCM16 LE mono both ways, the caller's at `inputSampleRate` (recorded, fed to
 *   an energy VAD), the agent's at `outputSampleRate`; everything else is a JSON text "data message";
 * - the playback buffer: the server models the client's buffer from `clientBufferSizeMs` and sends reply
 *   audio at most that far ahead of real time (the default 60 ms is nearly real time; a large value sends
 *   a reply at once);
 * - turns: `call_started`, then `state` (`listening`, `thinking`, `speaking`) and `transcript` messages
 *   (`role`, `medium`, `text` or `delta`, `final`, `ordinal`); the agent speaks first unless
 *   `firstSpeakerSettings` says the user does;
 * - barge-in: speech while the agent's audio is still playing at the client sends `playback_clear_buffer`
 *   (the client must drop what it has not played) and stops the reply;
 * - keep-alive: the client's `ping {timestamp}` is answered with `pong` carrying the same timestamp;
 * - limits: the call ends (close 1000) at `maxDuration`;
 * - text and tools: `user_text_message {text, urgency}` (and its former name `input_text_message`, noted)
 *   is recorded, DTMF arrives this way; `callTool()` sends `client_tool_invocation` for a client tool of
 *   the call's `selectedTools` and records the `client_tool_result`; `hang_up` ends the call.
 * `dataMessages` switches off messages by name. What the client does against the protocol lands in
 * `record.notes`.
 */
import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import { type MalformedKind, OVERSIZED_BYTES, type StandInConnection } from '../s2s/connection.js';
import { type ReplyRecord, StandInRecord } from '../s2s/record.js';
import { ReplyStream } from '../s2s/reply.js';
import { EnergyVad } from '../s2s/vad.js';
import { replyMsFrom, replyToneHz } from '../s2s/voice.js';
import type { CallEntry } from './calls.js';

export interface CallOptions {
  readonly replyMs: number;
  readonly chunkMs: number;
  readonly turnSilenceMs: number;
}

type ServerMessage =
  | { type: 'call_started'; callId: string }
  | { type: 'state'; state: 'idle' | 'listening' | 'thinking' | 'speaking' }
  | {
      type: 'transcript';
      role: 'user' | 'agent';
      medium: 'voice' | 'text';
      text: string | null;
      delta: string | null;
      final: boolean;
      ordinal: number;
    }
  | { type: 'pong'; timestamp: unknown }
  | { type: 'playback_clear_buffer' }
  | {
      type: 'client_tool_invocation';
      toolName: string;
      invocationId: string;
      parameters: Record<string, unknown>;
    };

/** The `dataMessages` switch of each server message. */
const SWITCH: Record<ServerMessage['type'], string> = {
  call_started: 'callStarted',
  state: 'state',
  transcript: 'transcript',
  pong: 'pong',
  playback_clear_buffer: 'playbackClearBuffer',
  client_tool_invocation: 'clientToolInvocation',
};

export const CLIENT_MESSAGE_TYPES = [
  'ping',
  'user_text_message',
  'input_text_message',
  'client_tool_result',
  'hang_up',
  'set_output_medium',
  'forced_agent_message',
] as const;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export class UltravoxConnection implements StandInConnection {
  readonly record: StandInRecord;
  private readonly vad: EnergyVad;
  private reply: ReplyStream | undefined;
  private replies = 0;
  private ordinal = 0;
  private speechFromMs = 0;
  private voiceOutput = true;
  private pendingReply: number | undefined;
  /** A `hang_up` with a farewell: the call ends once the farewell has played. */
  private hangingUp = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly pendingTools = new Set<string>();

  constructor(
    private readonly ws: WebSocket,
    readonly call: CallEntry,
    private readonly options: CallOptions,
  ) {
    this.record = new StandInRecord(randomUUID(), call.callId);
    this.vad = new EnergyVad(call.spec.medium.inputSampleRate, {
      thresholdDbfs: -40,
      silenceMs: options.turnSilenceMs,
      prefixPaddingMs: 0,
    });
    this.send({ type: 'call_started', callId: call.callId });
    this.after(call.spec.maxDurationMs, () => this.end(1000, 'max duration reached', 'timeout'));
    if (call.spec.firstSpeaker === 'agent') this.startReply(this.replyLength());
    else this.state('listening');
  }

  get medium() {
    return this.call.spec.medium;
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private send(m: ServerMessage): void {
    if (this.ws.readyState !== this.ws.OPEN || this.medium.dataMessages[SWITCH[m.type]] === false) return;
    this.record.sentType(m.type);
    this.ws.send(JSON.stringify(m));
  }

  private state(state: 'listening' | 'thinking' | 'speaking'): void {
    this.send({ type: 'state', state });
  }

  onFrame(data: Buffer, isBinary: boolean): void {
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
      return;
    }
    if (!isObject(msg) || typeof msg.type !== 'string') {
      this.record.message('(none)', msg);
      this.record.note('a data message without a string `type`');
      return;
    }
    this.record.message(msg.type, msg);
    switch (msg.type) {
      case 'ping':
        this.send({ type: 'pong', timestamp: msg.timestamp });
        return;
      case 'input_text_message':
        this.record.note('input_text_message is the former name of user_text_message');
        this.userText(msg);
        return;
      case 'user_text_message':
        this.userText(msg);
        return;
      case 'client_tool_result':
        this.toolResult(msg);
        return;
      case 'hang_up':
        this.hangUp(msg.message);
        return;
      case 'set_output_medium':
        if (msg.medium !== 'voice' && msg.medium !== 'text')
          this.record.note(
            `set_output_medium.medium must be voice or text, got ${JSON.stringify(msg.medium)}`,
          );
        else this.voiceOutput = msg.medium === 'voice';
        return;
      case 'forced_agent_message': {
        const content = typeof msg.content === 'string' ? msg.content : '';
        this.interrupt();
        this.startReply(this.replyLength(content));
        return;
      }
      default:
        this.record.note(`unknown data message type ${JSON.stringify(msg.type)}`);
    }
  }

  private audio(data: Buffer): void {
    this.record.message('audio', { bytes: data.length });
    if ((data.length & 1) !== 0)
      this.record.note(`binary audio must be whole 16-bit samples, got a frame of ${data.length} bytes`);
    const n = data.length >> 1;
    const pcm = new Int16Array(n);
    for (let i = 0; i < n; i++) pcm[i] = data.readInt16LE(2 * i);
    this.record.audio('pcm16', this.medium.inputSampleRate, pcm);
    for (const v of this.vad.push(pcm)) {
      if (v.kind === 'start') {
        this.speechFromMs = v.ms;
        this.interrupt();
      } else this.userStopped(v.ms - this.speechFromMs);
    }
  }

  private speaking(): boolean {
    const r = this.reply;
    return r !== undefined && (r.active || performance.now() < r.audibleUntil());
  }

  /** The caller speaks over the agent: the client drops its buffer, the reply stops. */
  private interrupt(): void {
    this.pendingReply = undefined;
    if (!this.speaking()) return;
    const cut = this.reply!;
    cut.stop('interrupted');
    this.record.interruptions.push({ at_ms: this.record.nowMs(), turn: null });
    this.send({ type: 'playback_clear_buffer' });
    this.transcript(
      'agent',
      'voice',
      `Tone ${cut.record.tone_hz} hertz, cut after ${Math.round(cut.record.sent_ms)} milliseconds.`,
    );
    this.state('listening');
  }

  private userStopped(heardMs: number): void {
    this.transcript('user', 'voice', `(speech of ${heardMs} ms)`);
    this.state('thinking');
    this.startReply(this.replyLength());
  }

  private transcript(role: 'user' | 'agent', medium: 'voice' | 'text', text: string, final = true): void {
    this.send({ type: 'transcript', role, medium, text, delta: null, final, ordinal: this.ordinal++ });
  }

  private replyLength(text?: string): number {
    return replyMsFrom(text) ?? replyMsFrom(this.call.spec.systemPrompt) ?? this.options.replyMs;
  }

  private userText(msg: Record<string, unknown>): void {
    const text = msg.text;
    if (typeof text !== 'string') {
      this.record.note(`${msg.type}.text must be a string`);
      return;
    }
    this.record.texts.push({ at_ms: this.record.nowMs(), type: msg.type as string, text });
    this.transcript('user', 'text', text);
    const urgency = msg.urgency ?? 'soon';
    if (urgency !== 'immediate' && urgency !== 'soon' && urgency !== 'later') {
      this.record.note(
        `${msg.type}.urgency must be immediate, soon or later, got ${JSON.stringify(urgency)}`,
      );
      return;
    }
    if (urgency === 'later' || msg.deferResponse === true) return;
    const ms = this.replyLength(text);
    if (urgency === 'immediate' || !this.speaking()) {
      this.interrupt();
      this.startReply(ms);
    } else this.pendingReply = ms;
  }

  private startReply(ms: number): void {
    this.reply?.stop('stopped');
    const rate = this.medium.outputSampleRate;
    const hz = replyToneHz(this.replies++);
    const rec: ReplyRecord = {
      id: this.replies,
      turn: null,
      tone_hz: hz,
      format: 'pcm16',
      rate,
      planned_ms: this.voiceOutput ? ms : 0,
      started_at_ms: this.record.nowMs(),
      sent_ms: 0,
      late_ms: 0,
      status: 'in_progress',
      ended_at_ms: null,
    };
    this.record.replies.push(rec);
    const stream: ReplyStream = new ReplyStream(
      rec,
      { chunkMs: this.options.chunkMs, rateFactor: 1, leadMs: this.medium.clientBufferSizeMs },
      (pcm) => {
        if (this.ws.readyState !== this.ws.OPEN) return;
        this.record.sentType('audio');
        this.ws.send(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), { binary: true });
      },
      () => this.ws.bufferedAmount,
      () => {
        // All sent: the agent is speaking until the client has played it.
        this.after(Math.max(0, stream.audibleUntil() - performance.now()), () => {
          if (this.reply !== stream || stream.record.status !== 'completed') return;
          this.transcript('agent', 'voice', stream.transcript());
          const next = this.pendingReply;
          this.pendingReply = undefined;
          if (next !== undefined) this.startReply(next);
          else if (this.hangingUp) this.end(1000, 'hang up', 'hangup');
          else this.state('listening');
        });
      },
    );
    this.reply = stream;
    this.state('speaking');
    this.send({
      type: 'transcript',
      role: 'agent',
      medium: 'voice',
      text: null,
      delta: stream.transcript(),
      final: false,
      ordinal: this.ordinal,
    });
    stream.start();
  }

  private hangUp(message: unknown): void {
    if (typeof message === 'string' && message !== '') {
      this.hangingUp = true;
      this.interrupt();
      this.startReply(this.replyLength(message));
      return;
    }
    this.end(1000, 'hang up', 'hangup');
  }

  private toolResult(msg: Record<string, unknown>): void {
    const id = msg.invocationId;
    const call = this.record.tool_calls.find((c) => c.id === id);
    if (call === undefined || !this.pendingTools.has(String(id))) {
      this.record.note(
        `client_tool_result for ${call === undefined ? 'an unknown' : 'an already answered'} invocationId ${JSON.stringify(id)}`,
      );
      return;
    }
    this.pendingTools.delete(String(id));
    call.answered_at_ms = this.record.nowMs();
    call.answer = msg;
    if (msg.errorType === undefined && typeof msg.result !== 'string')
      this.record.note(`client_tool_result.result must be a string, got ${typeof msg.result}`);
    const reaction = msg.agentReaction ?? 'speaks';
    if (reaction !== 'speaks' && reaction !== 'listens' && reaction !== 'speaks-once') {
      this.record.note(
        `client_tool_result.agentReaction must be speaks, listens or speaks-once, got ${JSON.stringify(reaction)}`,
      );
      return;
    }
    if (reaction !== 'listens') this.startReply(this.replyLength());
  }

  callTool(name: string, parameters: Record<string, unknown>): string {
    if (this.ws.readyState !== this.ws.OPEN) throw new Error('the call is closed');
    const tools = this.call.spec.clientTools;
    if (!tools.includes(name))
      throw new Error(
        `${name} is not a client tool of this call (selectedTools has ${tools.length === 0 ? 'none' : tools.join(', ')})`,
      );
    const id = randomUUID();
    this.pendingTools.add(id);
    this.record.tool_calls.push({
      at_ms: this.record.nowMs(),
      id,
      name,
      parameters,
      answered_at_ms: null,
      answer: null,
    });
    this.send({ type: 'client_tool_invocation', toolName: name, invocationId: id, parameters });
    return id;
  }

  speechStarted(): void {
    this.vad.forceStart();
    this.speechFromMs = this.vad.nowMs;
    this.interrupt();
  }

  sendMalformed(kind: MalformedKind): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sentType(`malformed:${kind}`);
    if (kind === 'binary' || kind === 'oversized') {
      // Half a sample, or one audio frame far past anything a server sends.
      this.ws.send(Buffer.alloc(kind === 'binary' ? 3 : OVERSIZED_BYTES), { binary: true });
      return;
    }
    const frames: Record<'json' | 'unknown_event' | 'no_type', string> = {
      json: '{"type":"transcript","role":',
      unknown_event: JSON.stringify({ type: 'stand_in_unknown_message' }),
      no_type: JSON.stringify({ state: 'speaking' }),
    };
    this.ws.send(frames[kind]);
  }

  private end(code: number, reason: string, endReason: string): void {
    this.call.endReason ??= endReason;
    this.close(code, reason);
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
    this.call.ended = this.record.closed_at;
    this.call.endReason ??= this.record.closed_by === 'client' ? 'hangup' : 'system';
  }
}
