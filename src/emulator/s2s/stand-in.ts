/**
 * The flag every speech-to-speech stand-in built on this shell takes beside the common ones
 * (src/emulator/stand-in.ts): `--turn-silence-ms`, the silence (vad.ts) that ends the caller's turn.
 * Each stand-in declares it among its own flags from here, so its name, default and bounds are one.
 */
import type { NumberFlag, StandInFlags } from '../stand-in.js';

export const TURN_SILENCE_FLAG: StandInFlags = { 'turn-silence-ms': { type: 'string', default: '500' } };

export const TURN_SILENCE_USAGE = `  --turn-silence-ms     silence that ends the caller's turn (default 500)
`;

/** The `--turn-silence-ms` value, in [50, 10000] ms. */
export function turnSilenceMs(num: NumberFlag): number {
  return num('turn-silence-ms', 50, 10_000);
}
