/**
 * A leg whose `from` equals its `to`, with no steps: no DSP at all, in either mode. The sink gets the pushed bytes (a view
 * valid during the call, as from any leg) and the markers, synchronously and so in order.
 */
import { samplesIn } from '../audio/codec.js';
import type { Logger } from '../log.js';
import type { Leg, LegSink, LegSpec } from './types.js';

export class PassLeg implements Leg {
  readonly denoising = false;
  #closed = false;
  #hadAudio = false;

  constructor(
    readonly spec: LegSpec,
    private readonly sink: LegSink,
    private readonly log: Logger | undefined,
  ) {}

  push(audio: Uint8Array): void {
    if (this.#closed) return;
    samplesIn(this.spec.from.codec, audio.length); // half a PCM16 sample throws here, as a DSP leg does
    if (audio.length === 0) return;
    this.#hadAudio = true;
    try {
      this.sink.audio(audio);
    } catch (err) {
      this.log?.error({ err }, 'pipeline sink threw');
    }
  }

  marker(token: number): void {
    if (!this.#closed) this.sink.marker(token);
  }

  reset(): void {
    if (this.#closed) return;
    const had = this.#hadAudio;
    this.#hadAudio = false;
    this.sink.reset(had);
  }

  close(): void {
    this.#closed = true;
  }
}
