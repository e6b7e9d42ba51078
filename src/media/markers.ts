/**
 * What a marker token stands for. A leg carries only a number through the pipeline (a control record in a
 * worker batch); the step that puts a marker in keeps its meaning here, and the leg's sink, further down
 * the same line, takes it out when the marker comes out behind its audio. One table per leg direction.
 */

/** Events that keep their place behind the bot's audio, on their way to the caller. */
export type CallerEvent =
  | { readonly event: 'mark'; readonly name: string }
  | { readonly event: 'dtmf'; readonly digit: string }
  | { readonly event: 'session_end'; readonly reason: string };

/** Events that keep their place behind the caller's audio, on their way to the bot. */
export type BotBoundEvent =
  | { readonly event: 'dtmf'; readonly digit: string }
  /** The call ends once the caller's audio before it has reached the bot: `endCall` ends it. */
  | { readonly event: 'end'; readonly endCall: () => void };

/** Markers in flight per leg; past this a peer is flooding events, and new ones are refused. */
export const MAX_MARKERS = 1024;

export class Markers<E> {
  #next = 0;
  readonly #held = new Map<number, E>();

  get size(): number {
    return this.#held.size;
  }

  /** The token for `event`, or -1 when MAX_MARKERS are already in flight. */
  put(event: E): number {
    if (this.#held.size >= MAX_MARKERS) return -1;
    this.#next = (this.#next + 1) & 0x7fffffff;
    this.#held.set(this.#next, event);
    return this.#next;
  }

  /** Takes every held event that `match`es, in the order they were put; their tokens are then not held. */
  takeWhere(match: (event: E) => boolean): E[] {
    const taken: E[] = [];
    for (const [token, event] of this.#held) {
      if (!match(event)) continue;
      taken.push(event);
      this.#held.delete(token);
    }
    return taken;
  }

  /** The event of `token`, once; undefined for a token not held. */
  take(token: number): E | undefined {
    const event = this.#held.get(token);
    this.#held.delete(token);
    return event;
  }
}
