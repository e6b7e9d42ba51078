/**
 * What one connection to a speech-to-speech stand-in received and did, kept for tests and the control
 * API: the client's messages in order (audio payloads replaced by their byte count), the input audio
 * decoded to PCM16 at its rate, each reply with its tone and how much of it went out, the user texts
 * (DTMF arrives as text), the tool calls with their answers, the keep-alive pings, and `notes`: every way
 * the client broke the vendor's protocol, so a test can assert there were none. Shared by the stand-ins
 * of src/emulator/elevenlabs-agent/ and src/emulator/ultravox/.
 */

export interface ReceivedMessage {
  /** Milliseconds since the connection opened, wall clock. */
  readonly at_ms: number;
  readonly type: string;
  /** The message as received, its audio replaced by `{ bytes: n }`. */
  readonly message: unknown;
}

export interface InputSegment {
  readonly format: string;
  readonly rate: number;
  /** Samples received, including any past the cap that were counted but not kept. */
  samples: number;
  readonly chunks: Int16Array[];
}

export interface ReplyRecord {
  readonly id: number;
  /** The dialect's id for the reply's turn where it has one (ElevenLabs `event_id`). */
  readonly turn: number | null;
  readonly tone_hz: number;
  readonly format: string;
  readonly rate: number;
  readonly planned_ms: number;
  readonly started_at_ms: number;
  sent_ms: number;
  /** Audio of this reply sent after it was interrupted (the late-audio fault), in ms. */
  late_ms: number;
  status: 'in_progress' | 'completed' | 'interrupted' | 'stopped';
  ended_at_ms: number | null;
}

export interface TextRecord {
  readonly at_ms: number;
  /** The message type that carried it (`user_message`, `user_text_message`, ...). */
  readonly type: string;
  readonly text: string;
}

export interface ToolCallRecord {
  readonly at_ms: number;
  readonly id: string;
  readonly name: string;
  readonly parameters: unknown;
  answered_at_ms: number | null;
  /** The answer as the client sent it (the whole message). */
  answer: unknown;
}

export interface PingRecord {
  readonly id: number;
  readonly sent_at_ms: number;
  answered_at_ms: number | null;
}

/** Input audio kept per connection: 10 minutes at 48 kHz (~58 MB) at most; more is counted, not kept. */
export const MAX_KEPT_INPUT_SAMPLES = 600 * 48000;
/** Messages (received and sent) kept per connection; later ones are counted only. */
export const MAX_KEPT_MESSAGES = 20_000;
/** Notes kept per connection: one bad client repeats the same fault per chunk. */
export const MAX_KEPT_NOTES = 200;

export class StandInRecord {
  readonly opened = performance.now();
  readonly opened_at = new Date().toISOString();
  closed_at: string | null = null;
  close_code: number | null = null;
  close_reason = '';
  /** Who closed: the stand-in (a limit, a hook, a missed pong) or the client. */
  closed_by: 'client' | 'server' | null = null;
  readonly received: ReceivedMessage[] = [];
  received_dropped = 0;
  readonly input: InputSegment[] = [];
  readonly replies: ReplyRecord[] = [];
  readonly texts: TextRecord[] = [];
  readonly tool_calls: ToolCallRecord[] = [];
  readonly pings: PingRecord[] = [];
  readonly interruptions: { at_ms: number; turn: number | null }[] = [];
  readonly notes: string[] = [];
  /** Server message types sent, in order (binary audio as `audio`). */
  readonly sent: string[] = [];
  private kept = 0;

  constructor(
    readonly id: string,
    /** What the client connected to: an agent id, a call id. */
    readonly target: string,
  ) {}

  nowMs(): number {
    return Math.round(performance.now() - this.opened);
  }

  message(type: string, message: unknown): void {
    if (this.received.length >= MAX_KEPT_MESSAGES) {
      this.received_dropped++;
      return;
    }
    this.received.push({ at_ms: this.nowMs(), type, message });
  }

  sentType(type: string): void {
    if (this.sent.length < MAX_KEPT_MESSAGES) this.sent.push(type);
  }

  /** A protocol fault of the client's, once per distinct text. */
  note(text: string): void {
    if (this.notes.length < MAX_KEPT_NOTES && !this.notes.includes(text)) this.notes.push(text);
  }

  audio(format: string, rate: number, pcm: Int16Array): void {
    let seg = this.input.at(-1);
    if (seg === undefined || seg.format !== format || seg.rate !== rate) {
      seg = { format, rate, samples: 0, chunks: [] };
      this.input.push(seg);
    }
    seg.samples += pcm.length;
    const room = MAX_KEPT_INPUT_SAMPLES - this.kept;
    if (room <= 0) return;
    const keep = pcm.length <= room ? pcm : pcm.subarray(0, room);
    this.kept += keep.length;
    seg.chunks.push(keep.slice());
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

  /** A JSON summary (no audio samples, no message bodies). */
  summary(): Record<string, unknown> {
    return {
      id: this.id,
      target: this.target,
      opened_at: this.opened_at,
      closed_at: this.closed_at,
      close_code: this.close_code,
      closed_by: this.closed_by,
      received: this.received.length + this.received_dropped,
      input: this.input.map((s) => ({ format: s.format, rate: s.rate, samples: s.samples })),
      replies: this.replies,
      texts: this.texts,
      tool_calls: this.tool_calls,
      interruptions: this.interruptions,
      pings: {
        sent: this.pings.length,
        answered: this.pings.filter((p) => p.answered_at_ms !== null).length,
      },
      notes: this.notes,
    };
  }

  /** The summary plus the received messages and the sent message types. */
  detail(): Record<string, unknown> {
    return {
      ...this.summary(),
      received: this.received,
      received_dropped: this.received_dropped,
      pings: this.pings,
      sent: this.sent,
    };
  }
}
