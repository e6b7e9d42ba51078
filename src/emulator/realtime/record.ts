/**
 * What one connection received and did, kept for tests and the control API: the client events in order
 * (audio payloads replaced by their byte count), the input audio decoded to PCM16 at its rate, the
 * truncates with their audio_end_ms, each response with its tone, planned and sent audio, and the
 * tools the model called with the outputs the client sent back.
 */

export interface ReceivedEvent {
  /** Milliseconds since the connection opened, wall clock. */
  readonly at_ms: number;
  readonly type: string;
  /** The event as received, with `audio` replaced by `{ bytes: n }`. */
  readonly event: unknown;
}

export interface TruncateRecord {
  readonly at_ms: number;
  readonly item_id: unknown;
  readonly content_index: unknown;
  readonly audio_end_ms: unknown;
  /** Audio the server had sent of that item when the truncate arrived, in ms. */
  readonly item_audio_ms: number | null;
  readonly accepted: boolean;
  readonly error?: string;
}

export interface ResponseRecord {
  readonly id: string;
  readonly item_id: string;
  readonly tone_hz: number;
  readonly format: string;
  readonly planned_ms: number;
  sent_ms: number;
  status: 'in_progress' | 'completed' | 'cancelled';
  reason?: string;
}

/** A call of a tool the stand-in's model made. */
export interface ToolCallRecord {
  readonly at_ms: number;
  readonly call_id: string;
  readonly name: string;
  /** JSON text, as sent. */
  readonly arguments: string;
}

/** A `function_call_output` the client sent back. */
export interface ToolOutputRecord {
  readonly at_ms: number;
  readonly call_id: string;
  /** As sent: the output's text (the bridge sends JSON). */
  readonly output: string;
}

export interface InputSegment {
  readonly format: string;
  readonly rate: number;
  /** Samples appended, including any past the cap that were counted but not kept. */
  samples: number;
  readonly chunks: Int16Array[];
}

/** Input audio kept per connection: 10 minutes at 24 kHz (~29 MB); more is counted, not kept. */
export const MAX_KEPT_INPUT_SAMPLES = 600 * 24000;
/** Client events kept per connection; later ones are counted only. */
export const MAX_KEPT_EVENTS = 20_000;

export class SessionRecord {
  readonly opened = performance.now();
  readonly opened_at = new Date().toISOString();
  closed_at: string | null = null;
  close_code: number | null = null;
  readonly events: ReceivedEvent[] = [];
  events_dropped = 0;
  readonly truncates: TruncateRecord[] = [];
  readonly responses: ResponseRecord[] = [];
  readonly toolCalls: ToolCallRecord[] = [];
  readonly toolOutputs: ToolOutputRecord[] = [];
  readonly input: InputSegment[] = [];
  /** Server event types sent, in order. */
  readonly sent: string[] = [];
  /**
   * How the handshake carried its key: `Authorization: Bearer` (`bearer`), Azure's `api-key` header
   * (`api-key`), or the browser's subprotocol; several when it carried more than one.
   */
  key_via: string[] = [];
  /** The path it was dialled at: OpenAI's `/v1/realtime` or Azure's `/openai/v1/realtime`. */
  path = '';
  private kept = 0;

  constructor(
    readonly id: string,
    readonly model: string,
  ) {}

  nowMs(): number {
    return Math.round(performance.now() - this.opened);
  }

  event(type: string, event: unknown): void {
    if (this.events.length >= MAX_KEPT_EVENTS) {
      this.events_dropped++;
      return;
    }
    this.events.push({ at_ms: this.nowMs(), type, event: withoutAudio(event) });
  }

  audio(format: string, rate: number, pcm: Int16Array): void {
    let seg = this.input.at(-1);
    if (seg === undefined || seg.format !== format) {
      seg = { format, rate, samples: 0, chunks: [] };
      this.input.push(seg);
    }
    seg.samples += pcm.length;
    const room = MAX_KEPT_INPUT_SAMPLES - this.kept;
    if (room <= 0) return;
    const keep = pcm.length <= room ? pcm : pcm.slice(0, room);
    this.kept += keep.length;
    seg.chunks.push(keep);
  }

  /** The input audio of the latest format (or segment `index`) as one PCM16 array. */
  inputAudio(index = this.input.length - 1): { format: string; rate: number; pcm: Int16Array } | undefined {
    const seg = this.input[index];
    if (seg === undefined) return undefined;
    const pcm = new Int16Array(seg.chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of seg.chunks) {
      pcm.set(c, at);
      at += c.length;
    }
    return { format: seg.format, rate: seg.rate, pcm };
  }

  /** A JSON summary (no audio samples). */
  summary(): Record<string, unknown> {
    return {
      id: this.id,
      model: this.model,
      path: this.path,
      key_via: this.key_via,
      opened_at: this.opened_at,
      closed_at: this.closed_at,
      close_code: this.close_code,
      events: this.events.length + this.events_dropped,
      input: this.input.map((s) => ({ format: s.format, rate: s.rate, samples: s.samples })),
      responses: this.responses,
      truncates: this.truncates,
      tool_calls: this.toolCalls,
      tool_outputs: this.toolOutputs,
    };
  }

  /** The summary plus the client events and the server event types sent. */
  detail(): Record<string, unknown> {
    return { ...this.summary(), received: this.events, events_dropped: this.events_dropped, sent: this.sent };
  }
}

function withoutAudio(event: unknown): unknown {
  if (typeof event !== 'object' || event === null || !('audio' in event)) return event;
  const audio = (event as { audio: unknown }).audio;
  return { ...event, audio: { bytes: typeof audio === 'string' ? Math.floor((audio.length * 3) / 4) : 0 } };
}
