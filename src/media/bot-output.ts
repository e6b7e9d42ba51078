/**
 * The bot -> caller leg between the bot and the outbound queue: bot audio through the DSP, and bot
 * events kept in order with that audio.
 *
 * The DSP may run in a worker, so audio the bot sent before a `mark` can still be in flight when the
 * mark arrives; queued at once, the mark would reach the provider ahead of its audio. Every chunk given
 * to the pipeline comes back as exactly one output (or an error record, or nothing when the pipeline
 * sheds it at submit or loses a worker: onGap), in order. So an ordered event waits until as many
 * outputs have come back as chunks had gone in when the event arrived. Where the count cannot catch up
 * (a shed or failed chunk), a bounded wait releases it anyway: a mark a little early beats one never sent.
 *
 * `clear` must cut audio still in the DSP too, and closing the DSP session is the one barrier the
 * pipeline offers (no sink calls after close): the leg closes its DSP session and opens a fresh one.
 */
import type { AudioPipeline, PipelineSession, PipelineSessionSpec, PipelineSink } from '../pipeline/types.js';
import type { OutboundQueue } from './outbound.js';

/** Events that keep their place behind the bot's audio. */
export type OrderedEvent =
  | { readonly event: 'mark'; readonly name: string }
  | { readonly event: 'dtmf'; readonly digit: string }
  | { readonly event: 'session_end'; readonly reason: string };

export interface BotOutputOwner {
  /** Applies an event whose audio has all reached the outbound queue. */
  applyOrdered(event: OrderedEvent): void;
  /** The bot -> caller DSP state was lost and rebuilt. */
  botGap(reason: string): void;
}

/** Longest an ordered event waits for audio that may have been shed inside the pipeline. */
export const ORDER_WAIT_MAX_MS = 2_000;

export class BotOutput {
  readonly #pipeline: AudioPipeline;
  readonly #near: PipelineSession | undefined;
  readonly #spec: PipelineSessionSpec;
  readonly #out: OutboundQueue;
  readonly #owner: BotOutputOwner;
  #leg: DspLeg;
  #closed = false;

  constructor(
    pipeline: AudioPipeline,
    spec: PipelineSessionSpec,
    out: OutboundQueue,
    owner: BotOutputOwner,
    /** The call's caller -> bot DSP session: this direction's sessions share its worker. */
    near?: PipelineSession,
  ) {
    this.#near = near;
    this.#pipeline = pipeline;
    this.#spec = spec;
    this.#out = out;
    this.#owner = owner;
    this.#leg = new DspLeg(this);
  }

  /** Bot audio, PCM16 LE at the bot rate. */
  audio(pcm: Uint8Array): void {
    if (!this.#closed) this.#leg.submit(pcm);
  }

  /** An event to apply once the audio the bot sent before it is queued for the provider. */
  ordered(event: OrderedEvent): void {
    if (!this.#closed) this.#leg.order(event);
  }

  /**
   * Drops the bot's audio in the DSP and in the outbound queue (the provider gets `clear`); events that
   * were waiting for the dropped audio apply right after.
   */
  clear(): void {
    if (this.#closed) return;
    const old = this.#leg;
    old.close();
    this.#leg = new DspLeg(this);
    this.#out.clear(old.submitted > 0);
    old.releaseAll();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#leg.close();
  }

  /** @internal */ open(sink: PipelineSink): PipelineSession {
    return this.#pipeline.open(this.#spec, sink, this.#near);
  }
  /** @internal */ push(encoded: Uint8Array): void {
    if (!this.#closed) this.#out.push(encoded);
  }
  /** @internal */ apply(event: OrderedEvent): void {
    if (!this.#closed) this.#owner.applyOrdered(event);
  }
  /** @internal */ gap(reason: string): void {
    this.#owner.botGap(reason);
  }
}

interface Pending {
  readonly after: number;
  readonly event: OrderedEvent;
}

/** One DSP session of the bot -> caller direction, and the events waiting on its output. */
class DspLeg implements PipelineSink {
  readonly #owner: BotOutput;
  readonly #dsp: PipelineSession;
  #submitted = 0;
  #delivered = 0;
  #pending: Pending[] = [];
  #timer: NodeJS.Timeout | undefined;
  #live = true;

  constructor(owner: BotOutput) {
    this.#owner = owner;
    this.#dsp = owner.open(this);
  }

  /** Bot audio chunks given to this leg's DSP session. */
  get submitted(): number {
    return this.#submitted;
  }

  submit(pcm: Uint8Array): void {
    this.#submitted++;
    this.#dsp.fromBot(pcm);
  }

  order(event: OrderedEvent): void {
    if (this.#pending.length === 0 && this.#delivered >= this.#submitted) {
      this.#owner.apply(event);
      return;
    }
    this.#pending.push({ after: this.#submitted, event });
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.releaseAll(), ORDER_WAIT_MAX_MS);
      this.#timer.unref();
    }
  }

  // PipelineSink
  toBot(): void {}
  toCaller(encoded: Uint8Array): void {
    if (!this.#live) return;
    this.#delivered++;
    this.#owner.push(encoded);
    if (this.#pending.length > 0) this.#release();
  }
  onGap(reason: string): void {
    // Audio in flight in a lost worker is gone: nothing more will come back for it.
    this.#delivered = this.#submitted;
    this.#owner.gap(reason);
    this.#release();
  }

  /** Applies every waiting event now (the audio they wait for will not come, or was dropped). */
  releaseAll(): void {
    this.#delivered = this.#submitted;
    this.#release();
  }

  close(): void {
    this.#live = false;
    this.#dsp.close();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #release(): void {
    while (this.#pending.length > 0 && this.#pending[0]!.after <= this.#delivered) {
      this.#owner.apply(this.#pending.shift()!.event);
    }
    if (this.#pending.length === 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }
}
