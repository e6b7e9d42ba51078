/**
 * The caller's digits as a speech model's user text (the `dtmf` field of the speech dialects): `ignore`
 * drops them; `respond` sends each digit at once (`[DTMF 5]`), for the model to answer; `text` (the
 * default) gathers a run of digits, none for DIGIT_RUN_MS after the last, into one text
 * (`[DTMF 1] [DTMF 2] [DTMF 3]`), so the model answers the entry as a whole and not each key. The
 * timer is on the call's clock; `clear()` drops a run not yet sent (the call ended).
 */
import type { Clock, ClockTimer } from '../../clock.js';
import type { DtmfMode } from '../../dialects/bot/speech.js';

/** In `text` mode, digits pressed within this of each other are one text. */
export const DIGIT_RUN_MS = 1_000;

export class DigitRuns {
  readonly #mode: DtmfMode;
  readonly #clock: Clock;
  readonly #send: (text: string) => void;
  #digits: string[] = [];
  #timer: ClockTimer | undefined;

  /** `send` carries a text to the model in the dialect's own message. */
  constructor(mode: DtmfMode | undefined, clock: Clock, send: (text: string) => void) {
    this.#mode = mode ?? 'text';
    this.#clock = clock;
    this.#send = send;
  }

  digit(digit: string): void {
    if (this.#mode === 'ignore') return;
    if (this.#mode === 'respond') {
      this.#send(`[DTMF ${digit}]`);
      return;
    }
    this.#digits.push(`[DTMF ${digit}]`);
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      const run = this.#digits.join(' ');
      this.#digits = [];
      this.#send(run);
    }, DIGIT_RUN_MS);
    this.#timer.unref();
  }

  /** Drops a run not yet sent. */
  clear(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#digits = [];
  }
}
