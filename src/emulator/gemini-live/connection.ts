/**
 * One connection to the Gemini Live stand-in, speaking `BidiGenerateContent` as js-genai's Live client
 * and Google's documents describe it:
 * - the first client message is `setup` (setup.ts); `setupComplete` answers it after `setupDelayMs`, and
 *   anything the client sends before that is noted; a bad message closes the socket (1007 and Google's
 *   wording), as the real server does, instead of an error event;
 * - caller audio: `realtimeInput.audio {data, mimeType: "audio/pcm;rate=N"}` (16 kHz when no rate is
 *   named; `mediaChunks` taken and noted as deprecated), recorded and fed to the energy VAD, or turns
 *   marked by `activityStart`/`activityEnd` when automatic activity detection is off;
 * - the model's turn: `serverContent.modelTurn.parts[].inlineData` PCM16 at 24 kHz
 *   (`audio/pcm;rate=24000`), then `generationComplete` once all is sent and `turnComplete` once it has
 *   played, as the real server waits for playback; text parts with `responseModalities: ["TEXT"]`;
 * - barge-in: speech (or a user text) while the turn is open sends `serverContent.interrupted` then
 *   `turnComplete`, unless `activityHandling` is `NO_INTERRUPTION`;
 * - user text: `realtimeInput.text` and `clientContent.turns` (answered when `turnComplete`), recorded
 *   (DTMF arrives this way);
 * - tools: `toolCall.functionCalls[{id, name, args}]` for a declared function (scripted by
 *   `call_tool=NAME` or the control hook; a turn open then ends there, its audio kept), answered by `toolResponse.functionResponses[{id, name,
 *   response}]`; speech over a pending call sends `toolCallCancellation {ids}`;
 * - limits: `goAway {timeLeft}` `goAwayLeadMs` before the connection's `connectionMs` (or on request),
 *   then close 1011 "Deadline expired ..."; with `sessionResumption` in the setup,
 *   `sessionResumptionUpdate {newHandle, resumable}` after setup and after each turn, and a setup naming
 *   such a handle resumes the conversation (its reply count and script) on the new connection.
 * The server's JSON goes in binary frames, as Google's does, unless `jsonFrames` is `text`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { LiveServerMessage } from '@google/genai';
import type { WebSocket } from 'ws';
import { type MalformedKind, OVERSIZED_BYTES, type StandInConnection } from '../s2s/connection.js';
import { HttpError } from '../s2s/control.js';
import type { ReplyRecord } from '../s2s/record.js';
import { ReplyStream } from '../s2s/reply.js';
import { type ScriptedCall, scriptedToolCall } from '../s2s/script.js';
import { EnergyVad } from '../s2s/vad.js';
import { replyMsFrom, replyToneHz } from '../s2s/voice.js';
import { LiveRecord } from './record.js';
import { contentText, fields, LiveCloseError, type LiveSetup, parseSetup } from './setup.js';

export interface LiveOptions {
  readonly replyMs: number;
  /** Audio per `inlineData` part, in ms. */
  readonly chunkMs: number;
  /** How many times faster than real time the model's audio goes out; 0: as fast as the socket takes. */
  readonly outputRateFactor: number;
  /** Audio each reply keeps ahead of its pace, ms (a client's playback buffer); 0 when absent. */
  readonly leadMs?: number;
  /** Silence that ends the caller's turn when the setup names none. */
  readonly turnSilenceMs: number;
  readonly setupDelayMs: number;
  /** A connection's life before the server closes it (0: no limit); `goAway` comes `goAwayLeadMs` before. */
  readonly connectionMs: number;
  readonly goAwayLeadMs: number;
  readonly jsonFrames: 'binary' | 'text';
  /** Refuse (close 1011) a resumption while the resumed connection is still open. */
  readonly refuseResumeWhileOpen: boolean;
}

/** What a resumption handle brings back: the conversation, across its connections. */
export class LiveConversation {
  readonly id = randomUUID();
  replies = 0;
  /** The instructions' scripted tool call has been made. */
  scriptDone = false;
  current: GeminiConnection | null = null;
}

/** What the connection needs of the server: resumption handles, issued and looked up. */
export interface LiveHandles {
  issue(conversation: LiveConversation): string;
  find(handle: string): LiveConversation | undefined;
}

type ServerMessage = Omit<LiveServerMessage, 'text' | 'data'>;

export const OUTPUT_RATE = 24000;
const OUTPUT_MIME = `audio/pcm;rate=${OUTPUT_RATE}`;
const CLIENT_FIELDS = ['setup', 'clientContent', 'realtimeInput', 'toolResponse', 'contextUpdate'];
const REALTIME_FIELDS = [
  'mediaChunks',
  'audio',
  'audioStreamEnd',
  'video',
  'text',
  'activityStart',
  'activityEnd',
];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A protobuf Duration in JSON: "5s", "1.500s". */
export function durationJson(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(3)}s`;
}

/** Close reasons are at most 123 bytes; Google's long ones arrive cut, as here. */
function reasonOf(text: string): string {
  const b = Buffer.from(text);
  return b.length <= 123
    ? text
    : b
        .subarray(0, 123)
        .toString('utf8')
        .replace(/\uFFFD+$/, '');
}

export class GeminiConnection implements StandInConnection {
  readonly record: LiveRecord;
  private setup: LiveSetup | null = null;
  private ready = false;
  private conversation: LiveConversation | null = null;
  private vad: EnergyVad | null = null;
  private vadRate = 0;
  private speechFromMs = 0;
  private reply: ReplyStream | undefined;
  /** The model's turn is open: from its first part until `turnComplete`. */
  private turnOpen = false;
  private readonly pendingTools = new Map<string, string>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly ws: WebSocket,
    target: string,
    private readonly options: LiveOptions,
    private readonly handles: LiveHandles,
    keyError: string | undefined,
  ) {
    this.record = new LiveRecord(randomUUID(), target);
    if (keyError !== undefined) this.close(1007, keyError);
  }

  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  private send(m: ServerMessage, label: string): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sentType(label);
    const json = JSON.stringify(m);
    if (this.options.jsonFrames === 'binary') this.ws.send(Buffer.from(json), { binary: true });
    else this.ws.send(json);
  }

  onFrame(data: Buffer, _isBinary: boolean): void {
    if (this.record.closed_by !== null) return;
    try {
      let msg: unknown;
      try {
        msg = JSON.parse(data.toString('utf8'));
      } catch (err) {
        this.record.message('invalid_json', { bytes: data.length });
        throw new LiveCloseError(1007, `Invalid JSON payload received. ${(err as Error).message}`);
      }
      if (!isObject(msg)) {
        this.record.message('(not an object)', msg);
        throw new LiveCloseError(1007, 'Invalid JSON payload received. Expected an object.');
      }
      const m = fields(msg, CLIENT_FIELDS, '');
      const kind = Object.keys(m)[0] ?? '(empty)';
      this.record.message(kind, withoutAudio(m));
      if (m.setup !== undefined) {
        this.onSetup(m.setup);
        return;
      }
      if (this.setup === null)
        throw new LiveCloseError(
          1007,
          'Request contains an invalid argument: the first message must be setup.',
        );
      if (!this.ready) this.record.note(`${kind} sent before setupComplete`);
      if (m.realtimeInput !== undefined) this.onRealtimeInput(m.realtimeInput);
      if (m.clientContent !== undefined) this.onClientContent(m.clientContent);
      if (m.toolResponse !== undefined) this.onToolResponse(m.toolResponse);
    } catch (err) {
      if (!(err instanceof LiveCloseError)) throw err;
      this.close(err.code, err.message);
    }
  }

  private onSetup(raw: unknown): void {
    if (this.setup !== null)
      throw new LiveCloseError(1007, 'Request contains an invalid argument: setup was already sent.');
    this.record.setup = raw;
    const setup = parseSetup(raw);
    let conversation = new LiveConversation();
    const handle = setup.resumption?.handle ?? null;
    if (handle !== null) {
      const found = this.handles.find(handle);
      if (found === undefined) throw new LiveCloseError(1008, 'Requested entity was not found.');
      const previous = found.current;
      if (previous !== null && previous.record.closed_at === null) {
        this.record.resumed_while_open = true;
        if (this.options.refuseResumeWhileOpen) throw new LiveCloseError(1011, 'Internal error occurred.');
      }
      this.record.resumed_from = previous?.record.id ?? null;
      conversation = found;
    }
    conversation.current = this;
    this.conversation = conversation;
    this.record.conversation = conversation.id;
    this.setup = setup;
    this.after(this.options.setupDelayMs, () => {
      this.ready = true;
      this.send({ setupComplete: {} }, 'setupComplete');
      this.offerHandle();
      const { connectionMs, goAwayLeadMs } = this.options;
      if (connectionMs > 0)
        this.after(Math.max(0, connectionMs - goAwayLeadMs), () =>
          this.goAway(Math.min(goAwayLeadMs, connectionMs)),
        );
    });
  }

  /** A fresh handle, when the setup asked for them and the conversation is at a turn boundary. */
  private offerHandle(): void {
    if (this.setup?.resumption === null || this.conversation === null) return;
    if (this.turnOpen || this.pendingTools.size > 0) return;
    const newHandle = this.handles.issue(this.conversation);
    this.record.handles.push({ at_ms: this.record.nowMs(), handle: newHandle });
    this.send({ sessionResumptionUpdate: { newHandle, resumable: true } }, 'sessionResumptionUpdate');
  }

  /** `goAway {timeLeft}`, then the close when the time is up. */
  goAway(timeLeftMs: number): void {
    const timeLeft = durationJson(timeLeftMs);
    this.record.go_aways.push({ at_ms: this.record.nowMs(), time_left: timeLeft });
    this.send({ goAway: { timeLeft } }, 'goAway');
    this.after(timeLeftMs, () => this.close(1011, 'Deadline expired before operation could complete.'));
  }

  private onRealtimeInput(raw: unknown): void {
    if (!isObject(raw))
      throw new LiveCloseError(
        1007,
        `Invalid value at 'realtime_input' (BidiGenerateContentRealtimeInput), ${JSON.stringify(raw)}`,
      );
    const r = fields(raw, REALTIME_FIELDS, 'realtime_input');
    if (r.mediaChunks !== undefined) {
      this.record.note('realtimeInput.mediaChunks is deprecated; send realtimeInput.audio');
      if (Array.isArray(r.mediaChunks))
        for (const c of r.mediaChunks) this.audio(c, 'realtime_input.media_chunks');
    }
    if (r.audio !== undefined) this.audio(r.audio, 'realtime_input.audio');
    if (r.video !== undefined) this.record.note('realtimeInput.video is taken and ignored');
    if (r.activityStart !== undefined || r.activityEnd !== undefined) {
      if (this.setup?.vadDisabled !== true) {
        throw new LiveCloseError(
          1007,
          'Request contains an invalid argument: explicit activity control is not supported when automatic activity detection is enabled.',
        );
      }
      if (r.activityStart !== undefined) this.callerSpeechStarted();
      if (r.activityEnd !== undefined)
        this.userTurnEnded(undefined, `(speech of ${this.record.nowMs() - this.speechFromMs} ms)`);
    }
    if (r.audioStreamEnd === true && this.vad?.inSpeech === true) {
      this.vad = null;
      this.userTurnEnded(undefined, '(speech, stream ended)');
    }
    if (r.text !== undefined) {
      if (typeof r.text !== 'string')
        throw new LiveCloseError(
          1007,
          `Invalid value at 'realtime_input.text' (TYPE_STRING), ${JSON.stringify(r.text)}`,
        );
      this.userText('realtimeInput.text', r.text, true);
    }
  }

  private audio(raw: unknown, at: string): void {
    if (!isObject(raw))
      throw new LiveCloseError(1007, `Invalid value at '${at}' (Blob), ${JSON.stringify(raw)}`);
    const blob = fields(raw, ['data', 'mimeType', 'displayName'], at);
    const mime = typeof blob.mimeType === 'string' ? blob.mimeType : '';
    const m = /^audio\/pcm(?:;\s*rate=(\d+))?$/.exec(mime);
    if (m === null)
      throw new LiveCloseError(
        1007,
        `Request contains an invalid argument: audio content type ${JSON.stringify(mime)} is not supported for this model configuration.`,
      );
    const rate = m[1] === undefined ? 16000 : Number(m[1]);
    if (rate < 8000 || rate > 48000)
      throw new LiveCloseError(
        1007,
        `Request contains an invalid argument: sample rate ${rate} is not supported.`,
      );
    if (typeof blob.data !== 'string')
      throw new LiveCloseError(
        1007,
        `Invalid value at '${at}.data' (TYPE_BYTES), ${JSON.stringify(blob.data)}`,
      );
    const bytes = Buffer.from(blob.data, 'base64');
    if ((bytes.length & 1) !== 0)
      this.record.note(`${at}: PCM16 audio must be whole samples, got ${bytes.length} bytes`);
    const pcm = new Int16Array(bytes.length >> 1);
    for (let i = 0; i < pcm.length; i++) pcm[i] = bytes.readInt16LE(2 * i);
    this.record.audio(`audio/pcm;rate=${rate}`, rate, pcm);
    const setup = this.setup!;
    if (setup.vadDisabled) return;
    if (this.vad === null || this.vadRate !== rate) {
      this.vad = new EnergyVad(rate, {
        thresholdDbfs: setup.thresholdDbfs,
        silenceMs: setup.silenceMs ?? this.options.turnSilenceMs,
        prefixPaddingMs: setup.prefixPaddingMs,
      });
      this.vadRate = rate;
    }
    for (const v of this.vad.push(pcm)) {
      if (v.kind === 'start') this.callerSpeechStarted();
      else this.userTurnEnded(undefined, `(speech of ${v.ms - this.speechFromMs} ms)`);
    }
  }

  /** The caller starts speaking: an open turn is interrupted, pending tool calls cancelled. */
  private callerSpeechStarted(): void {
    this.speechFromMs = this.vad?.nowMs ?? this.record.nowMs();
    if (this.setup?.interrupts === false) return;
    this.interrupt();
    if (this.pendingTools.size > 0) {
      const ids = [...this.pendingTools.keys()];
      this.pendingTools.clear();
      this.record.tool_cancellations.push({ at_ms: this.record.nowMs(), ids });
      this.send({ toolCallCancellation: { ids } }, 'toolCallCancellation');
    }
  }

  private interrupt(): void {
    if (!this.turnOpen) return;
    this.turnOpen = false;
    this.reply?.stop('interrupted');
    this.record.interruptions.push({ at_ms: this.record.nowMs(), turn: null });
    this.send({ serverContent: { interrupted: true } }, 'serverContent.interrupted');
    this.send({ serverContent: { turnComplete: true } }, 'serverContent.turnComplete');
    this.offerHandle();
  }

  private userText(type: string, text: string, answer: boolean): void {
    this.record.texts.push({ at_ms: this.record.nowMs(), type, text });
    if (!answer) return;
    if (this.setup?.interrupts !== false) this.interrupt();
    this.userTurnEnded(text, undefined);
  }

  private onClientContent(raw: unknown): void {
    if (!isObject(raw))
      throw new LiveCloseError(
        1007,
        `Invalid value at 'client_content' (BidiGenerateContentClientContent), ${JSON.stringify(raw)}`,
      );
    const c = fields(raw, ['turns', 'turnComplete'], 'client_content');
    const texts: string[] = [];
    if (c.turns !== undefined) {
      if (!Array.isArray(c.turns))
        throw new LiveCloseError(
          1007,
          `Invalid value at 'client_content.turns' (Content), ${JSON.stringify(c.turns)}`,
        );
      c.turns.forEach((t, i) => {
        const text = contentText(t, `client_content.turns[${i}]`);
        if (text !== '') texts.push(text);
      });
    }
    for (const t of texts)
      this.record.texts.push({ at_ms: this.record.nowMs(), type: 'clientContent', text: t });
    // Content from the client interrupts the model's generation; a complete turn is answered.
    if (this.setup?.interrupts !== false && texts.length > 0) this.interrupt();
    if (c.turnComplete === true) this.userTurnEnded(texts.join('\n'), undefined);
  }

  /** The user's turn is over (speech, text or content): the model answers or calls a scripted tool. */
  private userTurnEnded(text: string | undefined, heard: string | undefined): void {
    if (heard !== undefined && this.setup?.inputTranscription === true)
      this.send(
        { serverContent: { inputTranscription: { text: heard } } },
        'serverContent.inputTranscription',
      );
    if (this.turnOpen || this.pendingTools.size > 0) return;
    const conv = this.conversation!;
    const fromText = scriptedToolCall(text);
    const fromSetup = conv.scriptDone ? undefined : scriptedToolCall(this.setup!.instructions);
    const script = fromText ?? fromSetup;
    if (script !== undefined) {
      if (script === fromSetup) conv.scriptDone = true;
      if (this.callScripted(script)) return;
    }
    this.startReply(replyMsFrom(text) ?? replyMsFrom(this.setup!.instructions) ?? this.options.replyMs);
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

  private startReply(ms: number): void {
    const conv = this.conversation!;
    const setup = this.setup!;
    this.reply?.stop('stopped');
    const index = conv.replies++;
    const rec: ReplyRecord = {
      id: index + 1,
      turn: null,
      tone_hz: replyToneHz(index),
      format: setup.modality === 'TEXT' ? 'text' : 'pcm16',
      rate: OUTPUT_RATE,
      planned_ms: setup.modality === 'TEXT' ? 0 : ms,
      started_at_ms: this.record.nowMs(),
      sent_ms: 0,
      late_ms: 0,
      status: 'in_progress',
      ended_at_ms: null,
    };
    this.record.replies.push(rec);
    this.turnOpen = true;
    const stream: ReplyStream = new ReplyStream(
      rec,
      {
        chunkMs: this.options.chunkMs,
        rateFactor: this.options.outputRateFactor,
        leadMs: this.options.leadMs ?? 0,
      },
      (pcm) => {
        const data = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64');
        this.send(
          {
            serverContent: {
              modelTurn: { role: 'model', parts: [{ inlineData: { mimeType: OUTPUT_MIME, data } }] },
            },
          },
          'serverContent.modelTurn',
        );
      },
      () => this.ws.bufferedAmount,
      () => {
        this.send({ serverContent: { generationComplete: true } }, 'serverContent.generationComplete');
        // The real server waits for the audio to have played before it completes the turn.
        this.after(Math.max(0, stream.audibleUntil() - performance.now()), () => {
          if (this.reply !== stream || !this.turnOpen) return;
          this.completeTurn(Math.round(stream.record.sent_ms / 40));
        });
      },
    );
    this.reply = stream;
    if (setup.outputTranscription)
      this.send(
        { serverContent: { outputTranscription: { text: stream.transcript() } } },
        'serverContent.outputTranscription',
      );
    if (setup.modality === 'TEXT') {
      this.send(
        { serverContent: { modelTurn: { role: 'model', parts: [{ text: stream.transcript() }] } } },
        'serverContent.modelTurn',
      );
      rec.status = 'completed';
      rec.ended_at_ms = rec.started_at_ms;
      this.send({ serverContent: { generationComplete: true } }, 'serverContent.generationComplete');
      this.completeTurn(8);
      return;
    }
    stream.start();
  }

  private completeTurn(tokens: number): void {
    this.turnOpen = false;
    this.send(
      {
        serverContent: { turnComplete: true },
        usageMetadata: { responseTokenCount: tokens, totalTokenCount: tokens },
      },
      'serverContent.turnComplete',
    );
    this.offerHandle();
  }

  callTool(name: string, parameters: Record<string, unknown>): string {
    if (this.ws.readyState !== this.ws.OPEN) throw new Error('the connection is closed');
    if (this.setup === null || !this.ready) throw new Error('the session is not set up yet');
    if (!this.setup.functions.includes(name)) {
      const declared = this.setup.functions;
      throw new Error(
        `${name} is not a declared function (setup.tools declares ${declared.length === 0 ? 'none' : declared.join(', ')})`,
      );
    }
    // The model calls a function at the end of what it said (a goodbye before end_call): the turn
    // ends there, its audio kept, as Google ends a turn with a toolCall; not an interruption.
    if (this.turnOpen) {
      this.reply?.stop('stopped');
      this.completeTurn(0);
    }
    const id = `function-call-${randomBytes(8).readBigUInt64BE().toString()}`;
    this.pendingTools.set(id, name);
    this.record.tool_calls.push({
      at_ms: this.record.nowMs(),
      id,
      name,
      parameters,
      answered_at_ms: null,
      answer: null,
    });
    this.send({ toolCall: { functionCalls: [{ id, name, args: parameters }] } }, 'toolCall');
    return id;
  }

  private onToolResponse(raw: unknown): void {
    if (!isObject(raw))
      throw new LiveCloseError(
        1007,
        `Invalid value at 'tool_response' (BidiGenerateContentToolResponse), ${JSON.stringify(raw)}`,
      );
    const r = fields(raw, ['functionResponses'], 'tool_response');
    if (!Array.isArray(r.functionResponses) || r.functionResponses.length === 0) {
      this.record.note('toolResponse without functionResponses');
      return;
    }
    let answered = false;
    r.functionResponses.forEach((item, i) => {
      const at = `tool_response.function_responses[${i}]`;
      if (!isObject(item))
        throw new LiveCloseError(
          1007,
          `Invalid value at '${at}' (FunctionResponse), ${JSON.stringify(item)}`,
        );
      const f = fields(item, ['id', 'name', 'response', 'parts', 'willContinue', 'scheduling'], at);
      if (f.response !== undefined && !isObject(f.response))
        throw new LiveCloseError(
          1007,
          `Invalid value at '${at}.response' (type.googleapis.com/google.protobuf.Struct), ${JSON.stringify(f.response)}`,
        );
      const id = typeof f.id === 'string' ? f.id : '';
      const call = this.record.tool_calls.find((c) => c.id === id);
      if (call === undefined || !this.pendingTools.has(id)) {
        this.record.note(
          `toolResponse for ${call === undefined ? 'an unknown' : 'a cancelled or answered'} id ${JSON.stringify(f.id)}`,
        );
        return;
      }
      if (f.name !== call.name)
        this.record.note(`toolResponse for ${id} names ${JSON.stringify(f.name)}, the call was ${call.name}`);
      this.pendingTools.delete(id);
      call.answered_at_ms = this.record.nowMs();
      call.answer = item;
      answered = true;
    });
    if (answered && this.pendingTools.size === 0)
      this.startReply(replyMsFrom(this.setup!.instructions) ?? this.options.replyMs);
  }

  /** Speech starts now, as if the VAD had heard it (the control hook). */
  speechStarted(): void {
    this.vad?.forceStart();
    this.callerSpeechStarted();
  }

  action(name: string, body: Record<string, unknown>): Record<string, unknown> | undefined {
    if (name !== 'go-away') return undefined;
    const ms = body.time_left_ms ?? 5000;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0 || ms > 600_000)
      throw new HttpError(400, `time_left_ms must be an integer from 0 to 600000, got ${JSON.stringify(ms)}`);
    if (this.ws.readyState !== this.ws.OPEN) throw new Error('the connection is closed');
    this.goAway(ms);
    return { time_left: durationJson(ms) };
  }

  sendMalformed(kind: MalformedKind): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.record.sentType(`malformed:${kind}`);
    const frames: Record<MalformedKind, string | Buffer> = {
      json: '{"serverContent":{"modelTurn":',
      binary: Buffer.from([0xde, 0xad, 0xbe, 0xef]),
      unknown_event: JSON.stringify({ standInUnknownMessage: {} }),
      no_type: '{}',
      oversized: JSON.stringify({
        serverContent: {
          modelTurn: {
            parts: [{ inlineData: { mimeType: OUTPUT_MIME, data: 'A'.repeat(OVERSIZED_BYTES) } }],
          },
        },
      }),
    };
    const frame = frames[kind];
    if (typeof frame !== 'string' || this.options.jsonFrames === 'binary')
      this.ws.send(Buffer.from(frame), { binary: true });
    else this.ws.send(frame);
  }

  close(code: number, reason: string): void {
    if (this.record.closed_by === null) this.record.closed_by = 'server';
    this.ws.close(code, reasonOf(reason));
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

/** The message with base64 audio replaced by its byte count, for the record. */
function withoutAudio(m: Record<string, unknown>): Record<string, unknown> {
  const ri = m.realtimeInput;
  if (!isObject(ri) || !isObject(ri.audio) || typeof ri.audio.data !== 'string') return m;
  return {
    ...m,
    realtimeInput: {
      ...ri,
      audio: { ...ri.audio, data: { bytes: Math.floor((ri.audio.data.length * 3) / 4) } },
    },
  };
}
