/**
 * A call's leg whose format is known only once its bot is connected: an ElevenLabs agent names its
 * audio formats in its first message, after the session (and its legs) began. Until `settle`, the
 * pipeline leg does not exist: the audio pushed is held, as copies, up to HELD_MS (the oldest dropped
 * past it, counted), and markers with it in order; `settle` opens the pipeline leg at the formats the bot
 * named and pushes what was held through it, so nothing is converted twice and nothing said before the
 * bot answered is lost. After that it is the pipeline leg, unchanged.
 *
 * It stands where the session would otherwise open the leg (session.ts), on either line: the caller's
 * audio waits here for the bot, and the bot's (none comes before its formats) would too.
 */
import { samplesIn } from '../audio/codec.js';
import type { Logger } from '../log.js';
import type { AudioPipeline, Leg, LegSink, LegSpec } from '../pipeline/types.js';
import { denoises } from '../pipeline/types.js';

/**
 * Audio held before the bot's formats are known: enough for a signed URL, a TLS dial and the agent's
 * first message (about half a second on the vendor's network) with room for one redial, and a bound so a
 * bot that never answers costs a few tens of kilobytes a call.
 */
export const HELD_MS = 3_000;

type Held = { readonly audio: Uint8Array } | { readonly token: number };

export interface SettlingLegOptions {
  readonly log?: Logger | undefined;
  /** Counts a held chunk dropped past HELD_MS. */
  readonly onShed?: () => void;
}

export class SettlingLeg implements Leg {
  readonly #pipeline: AudioPipeline;
  readonly #sink: LegSink;
  readonly #o: SettlingLegOptions;
  /** Until settled, the spec the session guessed (its `from` checks what is pushed). */
  #spec: LegSpec;
  #leg: Leg | undefined;
  #held: Held[] = [];
  #heldBytes = 0;
  readonly #maxBytes: number;
  #closed = false;

  constructor(pipeline: AudioPipeline, spec: LegSpec, sink: LegSink, o: SettlingLegOptions = {}) {
    this.#pipeline = pipeline;
    this.#spec = spec;
    this.#sink = sink;
    this.#o = o;
    const bytesPerMs = (spec.from.rate / 1000) * (spec.from.codec === 'slin' ? 2 : 1);
    this.#maxBytes = Math.ceil(HELD_MS * bytesPerMs);
  }

  get spec(): LegSpec {
    return this.#leg?.spec ?? this.#spec;
  }

  /** The noise suppressor's state once open; before, whether the leg will have one. */
  get denoising(): boolean {
    return this.#leg?.denoising ?? denoises(this.#spec);
  }

  /** The pipeline leg, once settled. */
  get leg(): Leg | undefined {
    return this.#leg;
  }

  get settled(): boolean {
    return this.#leg !== undefined;
  }

  /** Bytes of audio held, waiting for the formats. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /**
   * Opens the pipeline leg at `spec` (`near`: a leg to share a worker with) and pushes what was held,
   * audio and markers in their order. Once: later calls are ignored. Throws what `open` throws.
   */
  settle(spec: LegSpec, near?: Leg): void {
    if (this.#leg !== undefined || this.#closed) return;
    const leg = this.#pipeline.open(spec, this.#sink, { near, log: this.#o.log });
    this.#leg = leg;
    this.#spec = spec;
    const held = this.#held;
    this.#held = [];
    this.#heldBytes = 0;
    for (const h of held) {
      if ('audio' in h) leg.push(h.audio);
      else leg.marker(h.token);
    }
  }

  push(audio: Uint8Array): void {
    if (this.#closed) return;
    if (this.#leg !== undefined) {
      this.#leg.push(audio);
      return;
    }
    samplesIn(this.#spec.from.codec, audio.length); // half a PCM16 sample throws here, as a leg does
    if (audio.length === 0) return;
    // A copy: the pushed bytes are a view its giver reuses.
    this.#held.push({ audio: new Uint8Array(audio) });
    this.#heldBytes += audio.length;
    while (this.#heldBytes > this.#maxBytes) this.#shedOldest();
  }

  marker(token: number): void {
    if (this.#closed) return;
    if (this.#leg !== undefined) this.#leg.marker(token);
    else this.#held.push({ token });
  }

  reset(): void {
    if (this.#closed) return;
    if (this.#leg !== undefined) {
      this.#leg.reset();
      return;
    }
    // The audio held goes; the markers keep their places, as a leg's do.
    const had = this.#heldBytes > 0;
    this.#held = this.#held.filter((h) => !('audio' in h));
    this.#heldBytes = 0;
    this.#sink.reset(had);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held = [];
    this.#heldBytes = 0;
    this.#leg?.close();
  }

  #shedOldest(): void {
    const i = this.#held.findIndex((h) => 'audio' in h);
    if (i < 0) return;
    const [h] = this.#held.splice(i, 1);
    this.#heldBytes -= (h as { audio: Uint8Array }).audio.length;
    this.#o.onShed?.();
  }
}
