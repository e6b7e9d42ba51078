/**
 * What one Gemini Live connection received and did: the shared stand-in record (messages, input audio,
 * replies, texts, tool calls, interruptions, notes) plus what is Gemini's own: the conversation it belongs
 * to (kept across resumed connections), the connection it resumed and whether that one was still open,
 * the resumption handles it issued, its `goAway`s and the tool calls it cancelled.
 */
import { StandInRecord } from '../s2s/record.js';

export class LiveRecord extends StandInRecord {
  /** The conversation a resumption handle brings back, the same across its connections. */
  conversation = '';
  /** The connection whose handle this one resumed. */
  resumed_from: string | null = null;
  /** That connection was still open when this one resumed it. */
  resumed_while_open = false;
  readonly handles: { at_ms: number; handle: string }[] = [];
  readonly go_aways: { at_ms: number; time_left: string }[] = [];
  readonly tool_cancellations: { at_ms: number; ids: string[] }[] = [];
  /** How the handshake carried the key: the `key` or `access_token` query parameter, or the header. */
  key_via: 'key' | 'access_token' | 'x-goog-api-key' | null = null;
  /** The setup message as received, once. */
  setup: unknown = null;

  override summary(): Record<string, unknown> {
    return {
      ...super.summary(),
      conversation: this.conversation,
      key_via: this.key_via,
      resumed_from: this.resumed_from,
      resumed_while_open: this.resumed_while_open,
      handles: this.handles.length,
      go_aways: this.go_aways,
      tool_cancellations: this.tool_cancellations,
    };
  }

  override detail(): Record<string, unknown> {
    return { ...super.detail(), setup: this.setup, handles: this.handles };
  }
}
