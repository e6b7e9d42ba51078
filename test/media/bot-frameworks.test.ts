/**
 * Pipecat and Vocode bots behind the bridge's `twilio` bot dialect, as replays of what each sends and
 * expects (test/helpers/pipecat-bot.ts and vocode-bot.ts, read from their source at a pinned commit;
 * the Python frameworks themselves do not run here). A call from a provider that plays audio as it
 * arrives (it reports each mark as the mark reaches it) goes through the bridge to each:
 *
 * - Pipecat: the runner detects Twilio in the first two text frames; the caller's tone reaches it (SNR);
 *   its 40 ms chunks, paced at real time, reach the caller whole and in time (SNR; no frame later than
 *   its turn in a playout that starts with the first and waits only for the bot's own late audio);
 *   a digit arrives; no mark either way; when the caller speaks over it, its `clear` reaches the caller
 *   within 100 ms and nothing of the dropped reply plays after, and it speaks again after.
 * - Vocode: the caller's tone reaches it; its unpaced 100 ms chunks, each with a mark, reach the caller
 *   whole; every mark comes back in order, each only once the caller has received its chunk, so the
 *   utterance ends when its audio has played, not when it was sent; barge-in: its `clear` reaches the
 *   caller, the marks of the chunks not played come back at once, and the next utterance's marks still
 *   match; `stop` at the end of the call, and it closes normally.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { tonePcm16 } from '../helpers/audio.js';
import { PipecatTwilioBot } from '../helpers/pipecat-bot.js';
import { interArrival, TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { VocodeTwilioBot } from '../helpers/vocode-bot.js';
import { quietFor, waitFor } from '../helpers/wait.js';

let bridge: ProcessRig | undefined;
const providers: TestProvider[] = [];
const bots: { close(): Promise<void> }[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  for (const b of bots.splice(0)) await b.close();
});

/** A sine at 8 kHz as samples. */
function tone(hz: number, ms: number, amplitude = 9000): Int16Array {
  const b = tonePcm16(hz, 8000, ms * 8, amplitude);
  return new Int16Array(b.buffer, b.byteOffset, b.length / 2);
}

function ulawOf(pcm: Int16Array): Buffer {
  const out = Buffer.alloc(pcm.length);
  encodeInto('pcmu', pcm, out);
  return out;
}

function pcmOfUlaw(ulaw: Buffer): Int16Array {
  const out = new Int16Array(ulaw.length);
  decodeInto('pcmu', ulaw, out);
  return out;
}

/**
 * A µ-law 8 kHz call through a bridge whose bot is `botUrl` in the `twilio` dialect. The bridge runs in a
 * process of its own: what arrives late at the caller is then the bridge's doing or the bot's (here), and
 * the caller's inter-arrival figures excuse only this process's own stalls.
 */
async function call(botUrl: string, id: string): Promise<TestProvider> {
  bridge = await startRig({ process: true, env: { BOT_URL: botUrl, BOT_DIALECT: 'twilio' } });
  const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken(), sampleRunDelay: true });
  providers.push(p);
  // A provider that plays audio as it arrives: playback reaches a mark when the mark arrives.
  p.ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return;
    const ev = JSON.parse(data.toString('utf8')) as { event: string; name?: string };
    if (ev.event === 'mark') p.send({ event: 'mark', name: ev.name });
  });
  await p.start(id, { media: { codec: 'pcmu', sample_rate: 8000 } });
  return p;
}

/** The caller speaks: `ms` of a 1 kHz tone then 500 ms of silence, µ-law, 20 ms at a time. */
function callerSpeaks(p: TestProvider, ms: number): Promise<void> {
  const pcm = new Int16Array((ms + 500) * 8);
  pcm.set(tone(1000, ms));
  return p.sendPaced(ulawOf(pcm), 160, 20);
}

/** The caller's audio received before `at` (ms), in bytes. */
function receivedBefore(p: TestProvider, at: number): number {
  return p.audio.filter((a) => a.at < at).reduce((n, a) => n + a.data.length, 0);
}

/** When the caller had received `bytes` of audio in all. */
function timeReceived(p: TestProvider, bytes: number): number | undefined {
  let n = 0;
  for (const a of p.audio) {
    n += a.data.length;
    if (n >= bytes) return a.at;
  }
  return undefined;
}

describe('a Pipecat bot (TwilioFrameSerializer through its runner), replayed', () => {
  it('detects Twilio in the first two frames; the caller is heard, its paced 40 ms chunks reach the caller whole and in time, and no mark goes either way', async () => {
    const bot = await PipecatTwilioBot.start();
    bots.push(bot);
    const p = await call(bot.url, 'pipecat-1');
    await waitFor(() => bot.calls[0]?.handshake !== undefined, 5_000, 'the runner to read two frames');
    const c = bot.calls[0]!;
    expect(c.failure).toBeUndefined();
    expect(c.received.slice(0, 2).map((r) => r.event)).toEqual(['connected', 'start']);
    expect(c.handshake).toMatchObject({
      transport: 'twilio',
      from: 'second',
      streamId: expect.stringMatching(/^MZ[0-9a-f]{32}$/),
      callId: expect.stringMatching(/^CA[0-9a-f]{32}$/),
      body: { session_id: 'pipecat-1', customer_phone: '+15550100', direction: 'inbound' },
    });

    // The caller's 1.5 s tone reaches the bot.
    await callerSpeaks(p, 1500);
    p.send({ event: 'dtmf', digit: '7' });
    await waitFor(() => c.heard.reduce((n, b) => n + b.length, 0) >= 16_000, 5_000, "the caller's audio");
    await waitFor(() => c.digits.length === 1, 2_000, 'the digit');
    expect(c.digits).toEqual(['7']);
    const heard = c.heardPcm();
    const inSnr = steadyToneSnrDb(trimSilence(heard, 8000), 1000, 8000)!;

    // The bot's 2 s reply, 50 chunks of 40 ms on its clock, reaches the caller whole and paced.
    const before = p.audio.length;
    c.speak(tone(440, 2000));
    await waitFor(() => p.audioBytes().length >= 16_000, 5_000, 'the reply at the caller');
    await quietFor(200, 'audio past the reply');
    const reply = p.audio.slice(before);
    const got = pcmOfUlaw(Buffer.concat(reply.map((a) => a.data)));
    const outSnr = steadyToneSnrDb(trimSilence(got, 8000), 440, 8000)!;
    const { own, worst } = interArrival(reply);
    const p99 = own.sort((a, b) => a - b)[Math.floor(own.length * 0.99)]!;
    const media = c.sent.filter((s) => s.event === 'media');
    const spanMs = media[media.length - 1]!.at - media[0]!.at;
    // Each frame against its turn in the caller's playout: it starts with the first frame, and where the
    // bot's own chunk left late (its clock restarts after a late send, so a stall of this shared process
    // delays the rest of its audio for good), waits for that chunk. What is left of a frame's lateness
    // is the bridge's.
    let due = reply[0]!.at;
    let bytes = 0;
    let late = Number.NEGATIVE_INFINITY;
    for (const a of reply) {
      due = Math.max(due, media[Math.floor(bytes / 320)]!.at);
      late = Math.max(late, a.at - due);
      due += a.data.length / 8;
      bytes += a.data.length;
    }
    console.log(
      `pipecat: caller's tone at the bot SNR ${inSnr.toFixed(1)} dB; ${media.length} chunks sent over ${spanMs.toFixed(0)} ms; reply at the caller SNR ${outSnr.toFixed(1)} dB, ${got.length / 8} ms, the latest frame ${late.toFixed(1)} ms after its turn, inter-arrival p99 ${p99.toFixed(1)} ms; ${worst}`,
    );
    expect(inSnr).toBeGreaterThanOrEqual(30);
    expect(media).toHaveLength(50);
    // Its clock: the first two together, then one every 40 ms (48 more periods).
    expect(spanMs).toBeGreaterThanOrEqual(48 * 40 - 20);
    expect(outSnr).toBeGreaterThanOrEqual(30);
    expect(got.length).toBe(16_000);
    // No frame later than its turn (within a frame), so the caller's playout runs dry only where the bot's
    // own audio came late. Pipecat's chunks come just in time (40 ms ahead, as the bridge's pacing lead
    // is), so the gaps between frames follow its timer's jitter (the p99 above, logged only).
    expect(late).toBeLessThanOrEqual(20);
    // Pipecat sends no mark, so the bridge has none to echo.
    expect(c.received.filter((r) => r.event === 'mark' || r.event === 'binary')).toEqual([]);
    expect(p.events.filter((e) => e.event === 'mark')).toEqual([]);
    expect(p.errors()).toEqual([]);
  });

  it('barge-in: its clear reaches the caller within 100 ms, nothing of the dropped reply plays after it, and its next reply plays', async () => {
    const bot = await PipecatTwilioBot.start();
    bots.push(bot);
    const p = await call(bot.url, 'pipecat-2');
    await waitFor(() => bot.calls[0]?.handshake !== undefined, 5_000, 'the handshake');
    const c = bot.calls[0]!;
    c.speak(tone(440, 10_000));
    await waitFor(() => p.audioBytes().length >= 8_000, 5_000, '1 s of the reply');
    const spoke = performance.now();
    await callerSpeaks(p, 600);
    const sentClear = c.sent.find((s) => s.event === 'clear');
    expect(sentClear, 'the bot noticed the caller and cleared').toBeDefined();
    const clear = await p.waitEvent('clear', 2_000);
    await quietFor(300, 'reply audio after the clear');
    const after = p.audio.filter((a) => a.at > clear.at + 5).reduce((n, a) => n + a.data.length, 0);
    const sentMs = c.sent.filter((s) => s.event === 'media').length * 40;
    console.log(
      `pipecat barge-in: the bot cleared ${(sentClear!.at - spoke).toFixed(0)} ms after the caller began; clear at the caller ${(clear.at - sentClear!.at).toFixed(1)} ms after it left the bot; ${receivedBefore(p, clear.at) / 8} ms of ${sentMs} ms sent were played; ${after / 8} ms after`,
    );
    expect(clear.at - sentClear!.at).toBeLessThanOrEqual(100);
    expect(after).toBe(0);
    expect(c.failure).toBeUndefined();

    // The stream goes on: a second reply reaches the caller whole.
    const from = p.audio.length;
    c.speak(tone(440, 1000));
    await waitFor(
      () => p.audio.slice(from).reduce((n, a) => n + a.data.length, 0) >= 8_000,
      5_000,
      'the next reply at the caller',
    );
    const next = pcmOfUlaw(Buffer.concat(p.audio.slice(from).map((a) => a.data)));
    expect(steadyToneSnrDb(trimSilence(next, 8000), 440, 8000)!).toBeGreaterThanOrEqual(30);
  });
});

describe('a Vocode bot (TwilioPhoneConversation and its TwilioOutputDevice), replayed', () => {
  it('hears the caller; its chunks reach the caller whole; each mark comes back in order once its chunk has played, so the utterance ends with its audio; stop ends it', async () => {
    const bot = await VocodeTwilioBot.start();
    bots.push(bot);
    const p = await call(bot.url, 'vocode-1');
    await waitFor(() => bot.calls[0]?.streamSid !== undefined, 5_000, 'start at the bot');
    const c = bot.calls[0]!;
    await callerSpeaks(p, 1500);
    await waitFor(() => c.heard.reduce((n, b) => n + b.length, 0) >= 16_000, 5_000, "the caller's audio");
    const inSnr = steadyToneSnrDb(trimSilence(c.heardPcm(), 8000), 1000, 8000)!;

    const before = p.audio.length;
    const u = c.speak(tone(440, 2000));
    const done = await u.finished;
    await waitFor(
      () => p.audio.slice(before).reduce((n, a) => n + a.data.length, 0) >= 16_000,
      5_000,
      'the utterance at the caller',
    );
    await quietFor(200, 'audio past the utterance');
    const reply = p.audio.slice(before);
    const got = pcmOfUlaw(Buffer.concat(reply.map((a) => a.data)));
    const outSnr = steadyToneSnrDb(trimSilence(got, 8000), 440, 8000)!;
    // Each chunk's mark against the moment the caller had received that chunk's last byte.
    const beforeBytes = p.audio.slice(0, before).reduce((n, a) => n + a.data.length, 0);
    let through = beforeBytes;
    const lead: number[] = [];
    for (const chunk of u.chunks) {
      through += chunk.bytes;
      lead.push(chunk.done!.at - timeReceived(p, through)!);
    }
    const sortedLead = [...lead].sort((a, b) => a - b);
    console.log(
      `vocode: caller's tone at the bot SNR ${inSnr.toFixed(1)} dB; utterance of ${u.chunks.length} chunks at the caller SNR ${outSnr.toFixed(1)} dB, ${got.length / 8} ms; marks back ${sortedLead[0]!.toFixed(1)}..${sortedLead[sortedLead.length - 1]!.toFixed(1)} ms after their chunk reached the caller; utterance over ${(done.at - u.sentAt).toFixed(0)} ms after it was sent`,
    );
    // Played, not merely sent: no mark before its audio reached the caller, each soon after.
    expect(sortedLead[0]!).toBeGreaterThanOrEqual(0);
    expect(sortedLead[sortedLead.length - 1]!).toBeLessThanOrEqual(250);
    expect(inSnr).toBeGreaterThanOrEqual(30);
    expect(outSnr).toBeGreaterThanOrEqual(30);
    expect(got.length).toBe(16_000);
    expect(u.chunks.map((ch) => ch.done?.state)).toEqual(u.chunks.map(() => 'played'));
    expect(c.outOfOrder).toEqual([]);
    expect(c.extraMarks).toEqual([]);
    expect(done.cutOff).toBe(false);
    // Sent in a few ms, over only once the caller had the audio (the bridge may send a frame or two ahead).
    expect(done.at - u.sentAt).toBeGreaterThanOrEqual(1800);

    p.send({ event: 'session_end' });
    await waitFor(() => c.closed !== undefined, 5_000, 'the bot to close');
    expect(c.stoppedAt).toBeDefined();
    expect(c.closed!.code).toBe(1000);
    expect(c.failure).toBeUndefined();
  });

  it('barge-in: its clear reaches the caller, the marks of unplayed chunks come back at once, and the next utterance still matches its marks', async () => {
    const bot = await VocodeTwilioBot.start();
    bots.push(bot);
    const p = await call(bot.url, 'vocode-2');
    await waitFor(() => bot.calls[0]?.streamSid !== undefined, 5_000, 'start at the bot');
    const c = bot.calls[0]!;
    const u = c.speak(tone(440, 10_000));
    await waitFor(() => p.audioBytes().length >= 8_000, 5_000, '1 s of the utterance');
    await callerSpeaks(p, 600);
    expect(c.clears, 'the bot noticed the caller and cleared').toHaveLength(1);
    const clearedAt = c.clears[0]!;
    const clear = await p.waitEvent('clear', 2_000);
    const done = await Promise.race([
      u.finished,
      new Promise<undefined>((r) => setTimeout(() => r(undefined), 3_000)),
    ]);
    await quietFor(300, 'utterance audio after the clear');
    const received = receivedBefore(p, clear.at);
    const after = p.audio.filter((a) => a.at > clear.at + 5).reduce((n, a) => n + a.data.length, 0);
    const played = u.chunks.filter((ch) => ch.done?.state === 'played').length;
    const cleared = u.chunks.filter((ch) => ch.done?.state === 'interrupted');
    const lastBack = Math.max(...cleared.map((ch) => ch.done!.at));
    console.log(
      `vocode barge-in: clear at the caller ${(clear.at - clearedAt).toFixed(1)} ms after it left the bot; ${played} chunks played (${played * 100} ms) against ${received / 8} ms received; ${cleared.length} cleared marks back within ${(lastBack - clearedAt).toFixed(1)} ms; ${after / 8} ms after the clear`,
    );
    expect(clear.at - clearedAt).toBeLessThanOrEqual(100);
    expect(done, 'the utterance accounted for').toEqual({ at: expect.any(Number), cutOff: true });
    expect(played + cleared.length).toBe(u.chunks.length);
    expect(played * 800).toBeLessThanOrEqual(received);
    expect(played * 800).toBeGreaterThanOrEqual(received - 1600);
    expect(lastBack - clearedAt).toBeLessThanOrEqual(100);
    expect(after).toBe(0);
    expect(c.outOfOrder).toEqual([]);
    expect(c.extraMarks).toEqual([]);

    // The next utterance: its marks match its own chunks, and it plays whole.
    const from = p.audio.length;
    const next = c.speak(tone(440, 1000));
    const nextDone = await next.finished;
    expect(nextDone.cutOff).toBe(false);
    expect(next.chunks.every((ch) => ch.done?.state === 'played')).toBe(true);
    expect(c.outOfOrder).toEqual([]);
    expect(p.audio.slice(from).reduce((n, a) => n + a.data.length, 0)).toBe(8_000);
  });
});
