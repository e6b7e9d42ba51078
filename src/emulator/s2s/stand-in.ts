/**
 * The flag every speech-to-speech stand-in built on this shell takes beside the common ones
 * (src/emulator/stand-in.ts): `--turn-silence-ms`, the silence (vad.ts) that ends the caller's turn.
 * Each stand-in declares it among its own flags from here, so its name, default and bounds are one.
 */
import type { NumberFlag, StandInFlags } from '../stand-in.js';

export const TURN_SILENCE_FLAG: StandInFlags = { 'turn-silence-ms': { type: 'string', default: '500' } };

export const TURN_SILENCE_USAGE = `  --turn-silence-ms     silence that ends the caller's turn (default 500)
`;

/**
 * `--lead-ms`, taken by the stand-ins that pace their replies (`--output-rate-factor`): each reply keeps
 * this much audio ahead of its pace, as a server fills a client's playback buffer, so a client playing at
 * real time never waits on the next message.
 */
export const LEAD_FLAG: StandInFlags = { 'lead-ms': { type: 'string', default: '0' } };

export const LEAD_USAGE = `  --lead-ms             each reply runs this far ahead of its pace (default 0)
`;

/** The `--lead-ms` value, in [0, 60000] ms. */
export function leadMs(num: NumberFlag): number {
  return num('lead-ms', 0, 60_000);
}

/** The `--turn-silence-ms` value, in [50, 10000] ms. */
export function turnSilenceMs(num: NumberFlag): number {
  return num('turn-silence-ms', 50, 10_000);
}
