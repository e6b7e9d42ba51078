/**
 * The conversation's items as the server keeps them: lookup by id, the last item (the next one's
 * `previous_item_id`), and for each assistant reply its audio length (what was sent, until a truncate
 * shortens it), which is what a truncate's `audio_end_ms` is checked against.
 */
import { type ConversationItem, missingParameter, RealtimeRequestError } from './events.js';
import type { ResponseRecord } from './record.js';

interface Entry {
  item: ConversationItem;
  /** The reply that produced an assistant audio item. */
  readonly reply?: ResponseRecord;
  truncatedMs?: number;
}

export class Conversation {
  private readonly items = new Map<string, Entry>();
  last: string | null = null;

  add(item: ConversationItem, reply?: ResponseRecord): void {
    this.items.set(item.id!, reply === undefined ? { item } : { item, reply });
    this.last = item.id!;
  }

  /** Replaces an item's body (a reply's final form), keeping its audio record. */
  update(item: ConversationItem): void {
    const e = this.items.get(item.id!);
    if (e !== undefined) e.item = item;
  }

  get(id: unknown): ConversationItem {
    return this.entry(id).item;
  }

  delete(id: unknown): string {
    this.entry(id);
    this.items.delete(id as string);
    if (this.last === id) this.last = null;
    return id as string;
  }

  /** Audio ms the server sent of an item (after truncation); null for items without audio. */
  audioMs(id: unknown): number | null {
    const e = typeof id === 'string' ? this.items.get(id) : undefined;
    if (e?.reply === undefined) return null;
    return e.truncatedMs ?? e.reply.sent_ms;
  }

  /** Checks a truncate as the server does and applies it; returns the new audio end. */
  truncate(id: unknown, contentIndex: unknown, audioEndMs: unknown): number {
    const e = this.entry(id);
    const have = this.audioMs(id);
    if (have === null) {
      throw new RealtimeRequestError(
        'invalid_value',
        'Only assistant messages with audio can be truncated.',
        'item_id',
      );
    }
    if (contentIndex !== 0) {
      throw new RealtimeRequestError(
        'invalid_value',
        `Invalid 'content_index': the item has one content part, index 0, got ${String(contentIndex)}.`,
        'content_index',
      );
    }
    if (typeof audioEndMs !== 'number' || !Number.isInteger(audioEndMs) || audioEndMs < 0) {
      throw new RealtimeRequestError(
        'invalid_value',
        "Invalid 'audio_end_ms': expected a non-negative integer.",
        'audio_end_ms',
      );
    }
    if (audioEndMs > have) {
      throw new RealtimeRequestError(
        'invalid_value',
        `Audio content of ${Math.floor(have)}ms is already shorter than ${audioEndMs}ms`,
        'audio_end_ms',
      );
    }
    e.truncatedMs = audioEndMs;
    return audioEndMs;
  }

  private entry(id: unknown): Entry {
    if (id === undefined) throw missingParameter('item_id');
    const found = typeof id === 'string' ? this.items.get(id) : undefined;
    if (found === undefined) {
      throw new RealtimeRequestError(
        'invalid_value',
        `Item with item_id '${String(id)}' not found.`,
        'item_id',
      );
    }
    return found;
  }
}
