/**
 * One conversation on the ElevenLabs Agents stand-in, speaking the conversation WebSocket as the vendor's
 * AsyncAPI contract (`@elevenlabs/types`) and its clients have it:
 * - start: the client's `conversation_initiation_client_data` (overrides, `dynamic_variables`) is answered
 *   with `conversation_initiation_metadata` carrying the agent's audio formats; a client that sends
 *   anything else first, or nothing for `initiationTimeoutMs`, gets the metadata all the same, noted;
 *   a `first_message` override (or the agent's `firstMessageMs`) makes the agent greet first;
 * - caller audio: `{"user_audio_chunk": <base64>}` (no `type`) in the input format, decoded, recorded and
 *   fed to an energy VAD; a turn that ends is answered with `user_transcript`, `agent_response` and the
 *   reply's `audio` events, all carrying the turn's `event_id`;
 * - barge-in: speech (or a `user_message`) while the reply is still playing at the client starts a new
 *   turn and sends `interruption {event_id}` with its id, then `agent_response_correction`. The reply to
 *   the new turn carries the same `event_id` as the interruption, as the real server's does (a client must
 *   drop audio with ids below the interruption's, and keep equal ones); `replyTurnAfterInterruption:
 *   'next'` gives it the next id instead. `interruptionEventId: 'cut'` gives the interruption the id of
 *   the turn it cuts instead of the new turn's (a server read as dropping audio "at or below" it).
 *   `lateAudioChunks` sends that many chunks of the interrupted reply, with its older id, after the
 *   interruption: audio a client must drop;
 * - keep-alive: `ping {ping_event:{event_id, ping_ms}}` every `pingIntervalMs`; a `pong` with that
 *   `event_id` later than `pongTimeoutMs` is missed, and `maxMissedPongs` missed in a row close the socket
 *   (1008); `ping_ms` is the round trip the previous pong measured;
 * - limits: the agent's `maxDurationMs` ends the conversation with an `error` event
 *   (`max_duration_exceeded`) and a normal close;
 * - text and tools: `user_message {text}` is recorded (DTMF arrives this way) and answered like a turn;
 *   `callTool()` sends `client_tool_call {tool_name, tool_call_id, parameters, event_id}`, at once or once
 *   a reply of `speakMs` it speaks first is all sent, and records the client's `client_tool_result`
 *   (`tool_call_id`, `result` a string, `is_error` a boolean, nothing else), after which the agent
 *   speaks.
 * Everything the client does against the protocol lands in `record.notes`.
 */
import { randomBytes } from 'node:crypto';
import type {
  AgentResponse,
  AgentResponseCorrection,
  Audio,
  ClientToolCallMessage,
  ConversationMetadata,
  ErrorMessage,
  Interruption,
  Ping,
  UserTranscript,
} from '@elevenlabs/types';
import type { WebSocket } from 'ws';
import { type MalformedKind, OVERSIZED_BYTES, type StandInConnection } from '../s2s/connection.js';
import { type ReplyRecord, StandInRecord } from '../s2s/record.js';
import { ReplyStream } from '../s2s/reply.js';
import { EnergyVad } from '../s2s/vad.js';
import { replyMsFrom, replyToneHz } from '../s2s/voice.js';
import { type AudioFormat, audioFormat, decodeChunk, encodeChunk, type FormatName } from './formats.js';
import { KeepAlive } from './keepalive.js';

type ServerEvent =
  | ConversationMetadata
  | Audio
  | Interruption
  | Ping
  | UserTranscript
  | AgentResponse
  | AgentResponseCorrection
  | ClientToolCallMessage
  | ErrorMessage;

/** One agent's settings on the stand-in. */
export interface AgentConfig {
  /** Reachable only through a signed URL (`get-signed-url` with the API key). Default false. */
  readonly private?: boolean;
  readonly inputFormat?: FormatName;
  readonly outputFormat?: FormatName;
  /** A greeting reply of this length when the conversation starts (the agent's first message); 0: none. */
  readonly firstMessageMs?: number;
  /** Reply length unless the prompt override or a user message says `reply_ms=N`. */
  readonly replyMs?: number;
  /** The conversation ends after this long; 0: no limit. */
  readonly maxDurationMs?: number;
}

export interface ConversationOptions {
  readonly replyMs: number;
  readonly chunkMs: number;
  readonly outputRateFactor: number;
  /** Audio each reply keeps ahead of its pace, ms (a client's playback buffer); 0 when absent. */
  readonly leadMs?: number;
  readonly pingIntervalMs: number;
  readonly pongTimeoutMs: number;
  readonly maxMissedPongs: number;
  readonly lateAudioChunks: number;
  readonly replyTurnAfterInterruption: 'same' | 'next';
  /** The interruption's `event_id`: the new turn's (`turn`, as the real server) or the cut turn's (`cut`). */
  readonly interruptionEventId: 'turn' | 'cut';
  readonly turnSilenceMs: number;
  readonly initiationTimeoutMs: number;
}

export const CLIENT_MESSAGE_TYPES = [
  'conversation_initiation_client_data',
  'pong',
  'user_message',
  'user_activity',
  'contextual_update',
  'client_tool_result',
  'feedback',
  'multimodal_message',
  'mcp_tool_approval_result',
] as const;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export class ElevenLabsConversation implements StandInConnection {
  readonly record: StandInRecord;
  readonly input: AudioFormat;
  readonly output: AudioFormat;
  /** The client's `conversation_initiation_client_data`, once received. */
  clientData: Record<string, unknown> | null = null;
  private started = false;
  private textOnly = false;
  private prompt: string | undefined;
  /** The `first_message` override: the agent greets with a reply (`reply_ms=N` in it sets the length). */
  private firstMessage: string | undefined;
  private readonly vad: EnergyVad;
  /** The latest `event_id` (a turn counter: a turn's transcript, response and audio share it). */
  private turn = 0;
  private turnInterrupted = false;
  /** Where the current speech began on the input audio's timeline, in ms. */
  private speechFromMs = 0;
  private reply: ReplyStream | undefined;
  private replies = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly keepAlive: KeepAlive;
  private readonly pendingTools = new Map<string, number>();

  constructor(
    private readonly ws: WebSocket,
    readonly agentId: string,
    readonly conversationId: string,
    private readonly agent: AgentConfig,
    private readonly options: ConversationOptions,
  ) {
    this.record = new StandInRecord(conversationId, agentId);
    this.input = audioFormat(agent.inputFormat ?? 'pcm_16000');
    this.output = audioFormat(agent.outputFormat ?? 'pcm_16000');
    this.vad = new EnergyVad(this.input.rate, {
      thresholdDbfs: -40,
      silenceMs: options.turnSilenceMs,
      prefixPaddingMs: 0,
    });
    this.keepAlive = new KeepAlive(
      this.record,
      {
        intervalMs: options.pingIntervalMs,
        timeoutMs: options.pongTimeoutMs,
        maxMissed: options.maxMissedPongs,
      },
      (ping) => this.send(ping),
      (reason) => this.close(1008, reason),
    );
    this.after(options.initiationTimeoutMs, () => {
      if (this.started) return;
      this.record.note(
        `no conversation_initiation_client_data within ${options.initiationTimeoutMs} ms: started with the agent's defaults`,
      );
      this.start();
    });
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private send(event: ServerEvent): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sentType(event.type);
    this.ws.send(JSON.stringify(event));
  }

  onFrame(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      this.record.message('binary', { bytes: data.length });
      this.record.note('binary frame: the conversation socket carries JSON text frames only');
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      this.record.message('invalid_json', { bytes: data.length });
      this.record.note('a frame that is not JSON');
      return;
    }
    if (!isObject(msg)) {
      this.record.note('a message that is not a JSON object');
      return;
    }
    if ('user_audio_chunk' in msg && msg.type === undefined) {
      const b64 = msg.user_audio_chunk;
      this.record.message('user_audio_chunk', {
        user_audio_chunk: { bytes: typeof b64 === 'string' ? Math.floor((b64.length * 3) / 4) : 0 },
      });
      this.audio(b64);
      return;
    }
    const type = msg.type;
    this.record.message(typeof type === 'string' ? type : '(none)', msg);
    if (typeof type !== 'string') {
      this.record.note('a message with neither `type` nor `user_audio_chunk`');
      return;
    }
    if (type !== 'conversation_initiation_client_data' && !this.started) {
      this.record.note(`${type} before conversation_initiation_client_data`);
      this.start();
    }
    switch (type) {
      case 'conversation_initiation_client_data':
        this.initiation(msg);
        return;
      case 'pong':
        this.keepAlive.pong(msg.event_id);
        return;
      case 'user_message':
        this.userText(type, msg.text);
        return;
      case 'multimodal_message': {
        const text = isObject(msg.text) ? msg.text.text : undefined;
        this.userText(type, text);
        return;
      }
      case 'client_tool_result':
        this.toolResult(msg);
        return;
      case 'user_activity':
      case 'contextual_update':
      case 'feedback':
      case 'mcp_tool_approval_result':
        return;
      default:
        this.record.note(`unknown message type ${JSON.stringify(type)}`);
    }
  }

  private initiation(msg: Record<string, unknown>): void {
    if (this.started) {
      this.record.note(
        this.clientData === null
          ? 'conversation_initiation_client_data after the conversation had started'
          : 'a second conversation_initiation_client_data',
      );
      return;
    }
    this.clientData = msg;
    const override = isObject(msg.conversation_config_override) ? msg.conversation_config_override : {};
    const agent = isObject(override.agent) ? override.agent : {};
    const prompt = isObject(agent.prompt) ? agent.prompt.prompt : undefined;
    if (typeof prompt === 'string') this.prompt = prompt;
    if (typeof agent.first_message === 'string' && agent.first_message !== '')
      this.firstMessage = agent.first_message;
    const conversation = isObject(override.conversation) ? override.conversation : {};
    this.textOnly = conversation.text_only === true;
    if (msg.dynamic_variables !== undefined && !isObject(msg.dynamic_variables))
      this.record.note('dynamic_variables must be an object');
    this.start();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.send({
      type: 'conversation_initiation_metadata',
      conversation_initiation_metadata_event: {
        conversation_id: this.conversationId,
        agent_output_audio_format: this.output.name,
        user_input_audio_format: this.input.name,
      },
    });
    this.keepAlive.start();
    const max = this.agent.maxDurationMs ?? 0;
    if (max > 0) {
      this.after(max, () => {
        this.send({
          type: 'error',
          error_event: {
            code: 1000,
            error_type: 'max_duration_exceeded',
            message: `The conversation reached its maximum duration of ${max} ms.`,
          },
        });
        this.close(1000, 'max duration exceeded');
      });
    }
    const greeting =
      this.firstMessage !== undefined
        ? this.replyLength(this.firstMessage)
        : (this.agent.firstMessageMs ?? 0);
    if (greeting > 0) this.startReply(++this.turn, greeting);
  }

  private audio(b64: unknown): void {
    const pcm = decodeChunk(b64, this.input);
    if (typeof pcm === 'string') {
      this.record.note(pcm);
      return;
    }
    if (!this.started) {
      this.record.note('user_audio_chunk before conversation_initiation_client_data');
      this.start();
    }
    this.record.audio(this.input.name, this.input.rate, pcm);
    for (const v of this.vad.push(pcm)) {
      if (v.kind === 'start') {
        this.speechFromMs = v.ms;
        this.userStarted();
      } else this.userStopped(v.ms - this.speechFromMs);
    }
  }

  private speaking(): boolean {
    const r = this.reply;
    return r !== undefined && (r.active || performance.now() < r.audibleUntil());
  }

  /** A new user turn; an interruption when the agent is still speaking. */
  private userStarted(): void {
    this.turn++;
    this.turnInterrupted = false;
    if (!this.speaking()) return;
    const cut = this.reply!;
    const cutTurn = cut.record.turn ?? 0;
    cut.stop('interrupted');
    const id = this.options.interruptionEventId === 'cut' ? cutTurn : this.turn;
    this.record.interruptions.push({ at_ms: this.record.nowMs(), turn: id });
    this.send({ type: 'interruption', interruption_event: { event_id: id } });
    this.turnInterrupted = true;
    if (this.options.lateAudioChunks > 0) cut.emitLate(this.options.lateAudioChunks);
    const original = cut.transcript();
    this.send({
      type: 'agent_response_correction',
      agent_response_correction_event: {
        original_agent_response: original,
        corrected_agent_response: `Tone ${cut.record.tone_hz} hertz, cut after ${Math.round(cut.record.sent_ms)} milliseconds.`,
        event_id: cutTurn,
      },
    });
  }

  private userStopped(heardMs: number): void {
    // No recognition here: the transcript says how long the turn was, silence at its end included.
    this.send({
      type: 'user_transcript',
      user_transcription_event: { user_transcript: `(speech of ${heardMs} ms)`, event_id: this.turn },
    });
    this.startReply(this.replyTurn(), this.replyLength());
  }

  /** The `event_id` of the reply to the current turn. */
  private replyTurn(): number {
    if (this.turnInterrupted && this.options.replyTurnAfterInterruption === 'next') {
      this.turnInterrupted = false;
      return ++this.turn;
    }
    return this.turn;
  }

  private replyLength(text?: string): number {
    return replyMsFrom(text) ?? replyMsFrom(this.prompt) ?? this.agent.replyMs ?? this.options.replyMs;
  }

  private userText(type: string, text: unknown): void {
    if (typeof text !== 'string') {
      this.record.note(`${type}.text must be a string`);
      return;
    }
    this.record.texts.push({ at_ms: this.record.nowMs(), type, text });
    this.userStarted();
    this.startReply(this.replyTurn(), this.replyLength(text));
  }

  /** Speaks a reply of `ms` for `turn`; `then` runs once its audio is all sent (not when it is cut). */
  private startReply(turn: number, ms: number, then?: () => void): void {
    this.reply?.stop('stopped');
    const hz = replyToneHz(this.replies++);
    const rec: ReplyRecord = {
      id: this.replies,
      turn,
      tone_hz: hz,
      format: this.output.name,
      rate: this.output.rate,
      planned_ms: this.textOnly ? 0 : ms,
      started_at_ms: this.record.nowMs(),
      sent_ms: 0,
      late_ms: 0,
      status: 'in_progress',
      ended_at_ms: null,
    };
    this.record.replies.push(rec);
    let first = true;
    const stream = new ReplyStream(
      rec,
      {
        chunkMs: this.options.chunkMs,
        rateFactor: this.options.outputRateFactor,
        leadMs: this.options.leadMs ?? 0,
      },
      (pcm) => {
        if (first) {
          first = false;
          this.agentResponse(turn, stream.transcript());
        }
        this.send({
          type: 'audio',
          audio_event: { audio_base_64: encodeChunk(pcm, this.output), event_id: turn },
        });
      },
      () => this.ws.bufferedAmount,
      () => then?.(),
    );
    this.reply = stream;
    if (this.textOnly) {
      this.agentResponse(turn, stream.transcript());
      stream.stop('stopped');
      rec.status = 'completed';
      return;
    }
    stream.start();
  }

  private agentResponse(turn: number, text: string): void {
    this.send({ type: 'agent_response', agent_response_event: { agent_response: text, event_id: turn } });
  }

  private toolResult(msg: Record<string, unknown>): void {
    const id = msg.tool_call_id;
    const call = this.record.tool_calls.find((c) => c.id === id);
    if (call === undefined || !this.pendingTools.has(String(id))) {
      this.record.note(
        `client_tool_result for ${call === undefined ? 'an unknown' : 'an already answered'} tool_call_id ${JSON.stringify(id)}`,
      );
      return;
    }
    this.pendingTools.delete(String(id));
    call.answered_at_ms = this.record.nowMs();
    call.answer = msg;
    if (typeof msg.result !== 'string')
      this.record.note(`client_tool_result.result must be a string, got ${typeof msg.result}`);
    if (typeof msg.is_error !== 'boolean')
      this.record.note(`client_tool_result.is_error must be a boolean, got ${typeof msg.is_error}`);
    const extra = Object.keys(msg).filter((k) => !['type', 'tool_call_id', 'result', 'is_error'].includes(k));
    if (extra.length > 0)
      this.record.note(`client_tool_result has fields it does not take: ${extra.join(', ')}`);
    this.startReply(this.turn, this.replyLength());
  }

  callTool(name: string, parameters: Record<string, unknown>, speakMs = 0): string {
    if (!this.started) throw new Error('the conversation has not started (no metadata sent yet)');
    if (this.ws.readyState !== this.ws.OPEN) throw new Error('the conversation is closed');
    const id = `toolu_${randomBytes(12).toString('hex')}`;
    const call = () => {
      if (this.ws.readyState !== this.ws.OPEN) return;
      this.pendingTools.set(id, this.turn);
      this.record.tool_calls.push({
        at_ms: this.record.nowMs(),
        id,
        name,
        parameters,
        answered_at_ms: null,
        answer: null,
      });
      this.send({
        type: 'client_tool_call',
        client_tool_call: { tool_name: name, tool_call_id: id, parameters, event_id: this.turn },
      });
    };
    if (speakMs > 0) this.startReply(++this.turn, speakMs, call);
    else call();
    return id;
  }

  speechStarted(): void {
    this.vad.forceStart();
    this.speechFromMs = this.vad.nowMs;
    this.userStarted();
  }

  sendMalformed(kind: MalformedKind): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sentType(`malformed:${kind}`);
    if (kind === 'binary') {
      this.ws.send(Buffer.from([0xde, 0xad, 0xbe, 0xef]), { binary: true });
      return;
    }
    const frames: Record<Exclude<MalformedKind, 'binary'>, () => string> = {
      json: () => '{"type":"audio","audio_event":{"audio_base_64":',
      unknown_event: () => JSON.stringify({ type: 'stand_in_unknown_event', stand_in_unknown_event: {} }),
      no_type: () => JSON.stringify({ audio_event: { audio_base_64: 'AAAA', event_id: this.turn } }),
      oversized: () =>
        JSON.stringify({
          type: 'audio',
          audio_event: { audio_base_64: 'A'.repeat(OVERSIZED_BYTES), event_id: this.turn },
        }),
    };
    this.ws.send(frames[kind]());
  }

  close(code: number, reason: string): void {
    if (this.record.closed_by === null) this.record.closed_by = 'server';
    this.ws.close(code, reason);
  }

  closed(code: number, reason: string): void {
    this.reply?.stop('stopped');
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.keepAlive.stop();
    if (this.record.closed_by === null) this.record.closed_by = 'client';
    this.record.closed_at = new Date().toISOString();
    this.record.close_code = code;
    this.record.close_reason = reason;
  }
}
