/**
 * What subscribes to a call's audio taps (src/media/taps.ts), apart from the taps themselves so that
 * code that only names these types (the live events, through the bridge context) does not load the DSP.
 */

/** A PCM16 consumer of a call's audio; every method optional. Samples are valid during the call only. */
export interface TapConsumer {
  /** The caller's audio, PCM16 at the caller's rate. */
  caller?(pcm: Int16Array): void;
  /** The bot's audio as it goes to the caller, PCM16 at the caller's rate. */
  bot?(pcm: Int16Array): void;
  /** The call has ended: no more audio. Called once; not for a subscriber that unsubscribed or threw. */
  end?(): void;
}

/** A consumer of the encoded bytes as they pass (no decode, no copy): the caller's at `rate`, the bot's at `outputRate`. */
export interface RawTap {
  caller?(bytes: Uint8Array): void;
  bot?(bytes: Uint8Array): void;
  end?(): void;
}
