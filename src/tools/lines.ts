/**
 * Where a call's tools sit on its two lines (src/media/call-tools.ts), each a step that calls only the
 * next one: on the bot -> caller line the bot's audio is seen (it stops hold audio and counts as the bot
 * speaking) and its clear (the audio not yet played is gone); on the caller -> bot line the caller's
 * audio and digits are seen (the idle policy's speech), the tools' own marks are taken out (the bot
 * dialect never sees them), and the end of the call reaches the tools first.
 */
import type { BridgeError } from '../errors.js';
import type { BotFormats, BotLeg, BotNotice, CallerPort } from '../media/bot/types.js';

/** What the lines tell the call's tools (call.ts). */
export interface LineWatcher {
  botAudio(bytes: number): void;
  botCleared(): void;
  callerAudio(pcm: Uint8Array): void;
  callerDigit(): void;
  /** Whether `name` is one of the tools' own marks (taken out of the line). */
  ownMark(name: string): boolean;
  markPlayed(name: string): void;
  end(): void;
}

/** The bot's way to the caller, seen by the tools on its way (bot dialect -> this -> ToCaller). */
export class WatchedPort implements CallerPort {
  readonly #tools: LineWatcher;
  readonly #next: CallerPort;

  constructor(tools: LineWatcher, next: CallerPort) {
    this.#tools = tools;
    this.#next = next;
  }

  audio(pcm: Uint8Array): void {
    this.#tools.botAudio(pcm.length);
    this.#next.audio(pcm);
  }

  mark(name: string): void {
    this.#next.mark(name);
  }

  dtmf(digit: string): void {
    this.#next.dtmf(digit);
  }

  hangup(reason: string): void {
    this.#next.hangup(reason);
  }

  clear(): void {
    this.#tools.botCleared();
    this.#next.clear();
  }

  failed(err: BridgeError): void {
    this.#next.failed(err);
  }

  formats(f: BotFormats): boolean {
    return this.#next.formats?.(f) ?? false;
  }
}

/** The bot leg the session drives (ToBot -> this -> bot dialect): the caller's speech seen, the tools' marks taken out. */
export class WatchedLeg implements BotLeg {
  readonly #tools: LineWatcher;
  readonly #next: BotLeg;

  constructor(tools: LineWatcher, next: BotLeg) {
    this.#tools = tools;
    this.#next = next;
  }

  audio(pcm: Uint8Array): void {
    this.#tools.callerAudio(pcm);
    this.#next.audio(pcm);
  }

  dtmf(digit: string): void {
    this.#tools.callerDigit();
    this.#next.dtmf(digit);
  }

  /** A mark reported played, or cleared (its audio will not play: a hang-up waiting on it goes now). */
  mark(name: string, cleared: boolean): void {
    if (this.#tools.ownMark(name)) this.#tools.markPlayed(name);
    else this.#next.mark(name, cleared);
  }

  end(reason: string): void {
    this.#tools.end();
    this.#next.end(reason);
  }

  heartbeat(): void {
    this.#next.heartbeat?.();
  }

  notify(event: BotNotice): void {
    this.#next.notify?.(event);
  }

  prompt(text: string): void {
    this.#next.prompt?.(text);
  }
}
