/**
 * One call placed by an emulated platform through the bridge to the echoing test bot, checked the way
 * every provider dialect's test checks it: the call's start at the bot, a digit, a mark the bot places
 * behind its echo and the platform reports played, no platform rule broken, the call ended well, and a
 * 440 Hz tone at >= 30 dB SNR each way (the bot hears it at its 16 kHz, the caller hears the echo).
 */
import { expect } from 'vitest';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { CallReport, SyntheticCall } from '../../src/emulator/caller.js';
import type { BotConnection, TestBot } from './bot.js';
import { waitFor } from './wait.js';

export interface ToneCallCheck {
  /** Names the call in the log line, e.g. `vonage 16000`. */
  readonly label: string;
  /** The call's rate as the caller hears it. */
  readonly rate: number;
  /** What the bot's session_start must hold. */
  readonly start: Record<string, unknown>;
  /** The digit the caller presses (in the call's `dtmf`). */
  readonly digit: string;
  /** The mark the bot places once it has heard half a second. */
  readonly mark: string;
}

export async function toneCallBothWays(
  bot: TestBot,
  call: SyntheticCall,
  c: ToneCallCheck,
): Promise<{ report: CallReport; conn: BotConnection }> {
  const done = call.run();
  const conn = await bot.waitConnection();
  expect(conn.sessionStart).toMatchObject(c.start);
  await conn.waitEvent('dtmf', 3_000, (e) => e.digit === c.digit);
  await waitFor(() => conn.audioBytesSoFar > 16000, 3_000, 'the caller audio at the bot');
  conn.send({ event: 'mark', name: c.mark });
  await conn.waitEvent('mark', 3_000, (e) => e.name === c.mark);
  const report = await done;
  expect(report.breaches).toEqual([]);
  expect(report.state).toBe('ended');
  const atBot = conn.audioBytes();
  const botPcm = new Int16Array(atBot.buffer, atBot.byteOffset, atBot.length >> 1);
  const inSnr = steadyToneSnrDb(trimSilence(botPcm, 16000), 440, 16000)!;
  const outSnr = steadyToneSnrDb(trimSilence(report.received, c.rate), 440, c.rate)!;
  console.log(`${c.label}: caller->bot SNR ${inSnr.toFixed(1)} dB, bot->caller SNR ${outSnr.toFixed(1)} dB`);
  expect(inSnr).toBeGreaterThanOrEqual(30);
  expect(outSnr).toBeGreaterThanOrEqual(30);
  expect(report.secondsReceived).toBeGreaterThan(1.5);
  // The platform hung up: the bot is told.
  await conn.waitEvent('session_end', 3_000);
  return { report, conn };
}
