/**
 * One response, streamed as the GA server does: `response.created`, the output item and content part
 * added, the transcript, `response.output_audio.delta` events of `deltaMs` of audio each sent
 * `outputRateFactor` times faster than real time (the real server also sends faster than real time;
 * the client paces), then the `.done` events and `response.done`. A cancel stops the deltas and closes
 * the item as `incomplete` and the response as `cancelled` with its reason. A response that calls a tool
 * (`plan.toolCall`) ends, after its audio, with a second output item of type `function_call`: its
 * arguments as one delta and `response.function_call_arguments.done`, as the real server streams them;
 * a response cancelled before then calls nothing.
 */

import { ToneVoice } from '../s2s/voice.js';
import { encodeAudio, type FormatInfo } from './audio-io.js';
import type { ConversationItem, Outgoing, RealtimeResponse } from './events.js';
import type { ResponseRecord } from './record.js';

export interface ResponsePlan {
  readonly id: string;
  readonly itemId: string;
  readonly previousItemId: string | null;
  readonly conversationId: string;
  readonly hz: number;
  readonly replyMs: number;
  readonly format: FormatInfo;
  readonly voice: string;
  readonly modality: 'audio' | 'text';
  /** The tool the model calls once it has spoken. */
  readonly toolCall?: PlannedToolCall;
}

/** A call of a tool as the stand-in's model makes it. */
export interface PlannedToolCall {
  readonly itemId: string;
  readonly callId: string;
  readonly name: string;
  /** The arguments as JSON text. */
  readonly arguments: string;
}

export interface StreamTiming {
  /** Audio per `response.output_audio.delta`, in ms. */
  readonly deltaMs: number;
  /** How many times faster than real time the deltas go out; 0 sends them as fast as the socket takes. */
  readonly outputRateFactor: number;
  /** Audio kept ahead of that pace, ms (a client's playback buffer); 0 when absent. */
  readonly leadMs?: number;
}

/** Above this many bytes queued on the socket the stream waits for it to drain. */
const MAX_BUFFERED_BYTES = 1 << 20;

export class ResponseStream {
  private readonly voice: ToneVoice;
  private sentSamples = 0;
  private chunks = 0;
  private startedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    private readonly plan: ResponsePlan,
    private readonly send: (e: Outgoing) => void,
    private readonly buffered: () => number,
    private readonly timing: StreamTiming,
    readonly record: ResponseRecord,
    private readonly onEnd: (item: ConversationItem) => void,
    private readonly onToolCall?: (item: ConversationItem) => void,
  ) {
    const total = Math.round((plan.replyMs * plan.format.rate) / 1000);
    this.voice = new ToneVoice(plan.hz, plan.format.rate, total);
  }

  get active(): boolean {
    return !this.ended;
  }

  get id(): string {
    return this.plan.id;
  }

  get itemId(): string {
    return this.plan.itemId;
  }

  private ids() {
    return { response_id: this.plan.id, item_id: this.plan.itemId, output_index: 0, content_index: 0 };
  }

  private item(status: 'in_progress' | 'completed' | 'incomplete'): ConversationItem {
    const content =
      status === 'in_progress'
        ? []
        : [
            this.plan.modality === 'audio'
              ? { type: 'output_audio' as const, transcript: this.voice.transcript() }
              : { type: 'output_text' as const, text: this.voice.transcript() },
          ];
    return {
      id: this.plan.itemId,
      object: 'realtime.item',
      type: 'message',
      role: 'assistant',
      status,
      content,
    };
  }

  private functionCall(status: 'in_progress' | 'completed'): ConversationItem {
    const call = this.plan.toolCall!;
    return {
      id: call.itemId,
      object: 'realtime.item',
      type: 'function_call',
      status,
      call_id: call.callId,
      name: call.name,
      arguments: status === 'completed' ? call.arguments : '',
    };
  }

  private response(
    status: 'in_progress' | 'completed' | 'cancelled',
    reason?: 'turn_detected' | 'client_cancelled',
  ): RealtimeResponse {
    const done = status !== 'in_progress';
    const calls =
      status === 'completed' && this.plan.toolCall !== undefined ? [this.functionCall('completed')] : [];
    const outputTokens = Math.ceil((this.sentSamples * 1000) / this.plan.format.rate / 50);
    return {
      id: this.plan.id,
      object: 'realtime.response',
      status,
      status_details:
        reason === undefined ? (done ? { type: 'completed' } : undefined) : { type: 'cancelled', reason },
      output: done ? [this.item(status === 'completed' ? 'completed' : 'incomplete'), ...calls] : [],
      conversation_id: this.plan.conversationId,
      output_modalities: [this.plan.modality],
      max_output_tokens: 'inf',
      audio: { output: { format: { type: this.plan.format.name } as never, voice: this.plan.voice } },
      usage: done ? { total_tokens: outputTokens, input_tokens: 0, output_tokens: outputTokens } : undefined,
      metadata: null,
    };
  }

  start(): void {
    const { response_id, output_index } = this.ids();
    this.send({ type: 'response.created', response: this.response('in_progress') });
    this.send({
      type: 'response.output_item.added',
      response_id,
      output_index,
      item: this.item('in_progress'),
    });
    this.send({
      type: 'conversation.item.added',
      previous_item_id: this.plan.previousItemId,
      item: this.item('in_progress'),
    });
    const part =
      this.plan.modality === 'audio'
        ? { type: 'audio' as const, transcript: '' }
        : { type: 'text' as const, text: '' };
    this.send({ type: 'response.content_part.added', ...this.ids(), part });
    if (this.plan.modality === 'text') {
      this.send({ type: 'response.output_text.delta', ...this.ids(), delta: this.voice.transcript() });
      this.finish('completed');
      return;
    }
    this.send({
      type: 'response.output_audio_transcript.delta',
      ...this.ids(),
      delta: this.voice.transcript(),
    });
    this.startedAt = performance.now();
    this.tick();
  }

  private tick = (): void => {
    this.timer = undefined;
    if (this.ended) return;
    const { deltaMs, outputRateFactor } = this.timing;
    const leadMs = this.timing.leadMs ?? 0;
    const perChunk = Math.max(1, Math.round((deltaMs * this.plan.format.rate) / 1000));
    const due =
      outputRateFactor > 0
        ? Math.floor(((performance.now() - this.startedAt + leadMs) * outputRateFactor) / deltaMs) + 1
        : Number.POSITIVE_INFINITY;
    while (this.chunks < due && this.buffered() < MAX_BUFFERED_BYTES) {
      const pcm = this.voice.next(perChunk);
      if (pcm === undefined) {
        this.finish('completed');
        return;
      }
      this.send({
        type: 'response.output_audio.delta',
        ...this.ids(),
        delta: encodeAudio(pcm, this.plan.format),
      });
      this.chunks++;
      this.sentSamples += pcm.length;
      this.record.sent_ms = (this.sentSamples * 1000) / this.plan.format.rate;
      if (outputRateFactor <= 0 && this.chunks % 50 === 0) break;
    }
    if (this.voice.remaining === 0) {
      this.finish('completed');
      return;
    }
    const wait =
      this.buffered() >= MAX_BUFFERED_BYTES || outputRateFactor <= 0
        ? 5
        : Math.max(
            0,
            this.startedAt + (this.chunks * deltaMs) / outputRateFactor - leadMs - performance.now(),
          );
    this.timer = setTimeout(this.tick, wait);
  };

  /** The function_call output item, streamed as the real server streams one. */
  private callTool(call: PlannedToolCall): void {
    const { response_id } = this.ids();
    const ids = { response_id, item_id: call.itemId, output_index: 1, call_id: call.callId };
    this.send({
      type: 'response.output_item.added',
      response_id,
      output_index: 1,
      item: this.functionCall('in_progress'),
    });
    this.send({
      type: 'conversation.item.added',
      previous_item_id: this.plan.itemId,
      item: this.functionCall('in_progress'),
    });
    this.send({ type: 'response.function_call_arguments.delta', ...ids, delta: call.arguments });
    this.send({
      type: 'response.function_call_arguments.done',
      ...ids,
      name: call.name,
      arguments: call.arguments,
    });
    const item = this.functionCall('completed');
    this.send({ type: 'response.output_item.done', response_id, output_index: 1, item });
    this.send({ type: 'conversation.item.done', previous_item_id: this.plan.itemId, item });
    this.onToolCall?.(item);
  }

  /** Stops the reply where it is (a client `response.cancel` or speech detected). */
  cancel(reason: 'turn_detected' | 'client_cancelled'): void {
    if (!this.ended) this.finish('cancelled', reason);
  }

  /** Stops without sending anything (the connection closed). */
  dispose(): void {
    this.ended = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private finish(status: 'completed' | 'cancelled', reason?: 'turn_detected' | 'client_cancelled'): void {
    this.dispose();
    const ids = this.ids();
    const transcript = this.voice.transcript();
    if (this.plan.modality === 'audio') {
      this.send({ type: 'response.output_audio.done', ...ids });
      this.send({ type: 'response.output_audio_transcript.done', ...ids, transcript });
      this.send({ type: 'response.content_part.done', ...ids, part: { type: 'audio', transcript } });
    } else {
      this.send({ type: 'response.output_text.done', ...ids, text: transcript });
      this.send({ type: 'response.content_part.done', ...ids, part: { type: 'text', text: transcript } });
    }
    const item = this.item(status === 'completed' ? 'completed' : 'incomplete');
    this.send({ type: 'response.output_item.done', response_id: ids.response_id, output_index: 0, item });
    this.send({ type: 'conversation.item.done', previous_item_id: this.plan.previousItemId, item });
    if (status === 'completed' && this.plan.toolCall !== undefined) this.callTool(this.plan.toolCall);
    this.send({ type: 'response.done', response: this.response(status, reason) });
    this.record.status = status;
    if (reason !== undefined) this.record.reason = reason;
    this.onEnd(item);
  }
}
