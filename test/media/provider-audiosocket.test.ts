/**
 * The bridge behind Asterisk AudioSocket (TCP on AUDIOSOCKET_PORT): calls placed by the emulated
 * Asterisk (which drops audio sent more than 60 ms ahead of its playout, and audio of another type), and
 * a client written here from the protocol's document for the cases the emulator has no knob for
 * (refused addresses, malformed messages, the timing of each message, hang-up by the bot).
 */
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { audioSocketMessage } from '../../src/media/providers/audiosocket.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { burstPacing } from '../helpers/platform-socket.js';
import { type InProcessRig, type ProcessRig, type Rig, startRig } from '../helpers/rig.js';
import { type Moment, moment } from '../helpers/schedstat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const UUID = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
const UUID2 = 'b1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
let bridge: Rig | undefined;
let bot: TestBot | undefined;
const clients: AsteriskSide[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.socket.destroy();
  await bridge?.close();
  bridge = undefined;
  await bot?.close();
  bot = undefined;
});

async function start(env: Record<string, string>, log?: 'warn'): Promise<InProcessRig> {
  const rig = await startRig({
    env: { AUDIOSOCKET_PORT: '0', AUDIOSOCKET_HOST: '127.0.0.1', ...env },
    ...(log === undefined ? {} : { log }),
  });
  bridge = rig;
  return rig;
}

/** The bridge in a process of its own, for the pacing check: its pauses are then in what arrives here. */
async function startElsewhere(env: Record<string, string>): Promise<ProcessRig> {
  const rig = await startRig({
    process: true,
    env: { AUDIOSOCKET_PORT: '0', AUDIOSOCKET_HOST: '127.0.0.1', ...env },
  });
  bridge = rig;
  return rig;
}

function target(): { host: string; port: number } {
  const rig = bridge!;
  const u = new URL(('bridge' in rig ? rig.bridge.audioSocketUrl : rig.process.audioSocketUrl)!);
  return { host: u.hostname, port: Number(u.port) };
}

/** Asterisk's side of an AudioSocket connection, as the protocol document describes it. */
class AsteriskSide {
  readonly socket: Socket;
  /** Messages in, with arrival time and this process's off-CPU time so far (schedstat). */
  readonly messages: (Moment & { type: number; payload: Buffer })[] = [];
  closed = false;
  readonly opened: Promise<void>;
  #pending = Buffer.alloc(0);

  constructor(localAddress?: string) {
    this.socket = connect({ ...target(), ...(localAddress === undefined ? {} : { localAddress }) });
    this.socket.setNoDelay(true);
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('error', reject);
    });
    this.opened.catch(() => {});
    this.socket.on('error', () => {});
    this.socket.on('data', (chunk: Buffer) => {
      let buf = Buffer.concat([this.#pending, chunk]);
      while (buf.length >= 3 && buf.length >= 3 + buf.readUInt16BE(1)) {
        const end = 3 + buf.readUInt16BE(1);
        this.messages.push({
          type: buf[0]!,
          payload: Buffer.from(buf.subarray(3, end)),
          ...moment(),
        });
        buf = buf.subarray(end);
      }
      this.#pending = Buffer.from(buf);
    });
    this.socket.on('close', () => {
      this.closed = true;
    });
    clients.push(this);
  }

  send(type: number, payload: Uint8Array = new Uint8Array(0)): void {
    this.socket.write(audioSocketMessage(type, payload));
  }

  uuid(id: string): void {
    this.send(0x01, Buffer.from(id.replaceAll('-', ''), 'hex'));
  }

  audio(type = 0x10, samples = 160, rate = 8000): void {
    this.send(type, tonePcm16(440, rate, samples));
  }

  of(type: number) {
    return this.messages.filter((m) => m.type === type);
  }
}

describe('Asterisk AudioSocket listener in front', () => {
  it('refuses connections from addresses not in AUDIOSOCKET_ALLOW (empty: all), even with MEDIA_AUTH=none, and logs them', async () => {
    bot = await TestBot.start({ echo: true });
    let rig = await start({ BOT_URL: bot.url, MEDIA_AUTH: 'none' }, 'warn');
    const a = new AsteriskSide();
    await a.opened;
    a.uuid(UUID);
    a.audio();
    await waitFor(() => a.closed, 3_000, 'the refused connection to close');
    expect(rig.bridge.ctx.sessions.count()).toBe(0);
    expect(rig.logs.some((l) => l.includes('AUDIOSOCKET_ALLOW is empty'))).toBe(true);
    await rig.close();

    // Listed 127.0.0.2: a connection from 127.0.0.1 is refused, one from 127.0.0.2 taken.
    rig = await start({ BOT_URL: bot.url, AUDIOSOCKET_ALLOW: '127.0.0.2' }, 'warn');
    const refused = new AsteriskSide('127.0.0.1');
    await refused.opened;
    refused.uuid(UUID);
    refused.audio();
    await waitFor(() => refused.closed, 3_000, 'the unlisted address to be cut');
    const line = rig.logs.find((l) => l.includes('not in AUDIOSOCKET_ALLOW'));
    expect(line).toContain('"remote":"127.0.0.1"');
    const ok = new AsteriskSide('127.0.0.2');
    await ok.opened;
    ok.uuid(UUID);
    ok.audio();
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: UUID });
    expect(ok.closed).toBe(false);
  });

  for (const rate of [8000, 16000, 48000]) {
    it(`carries an emulated Asterisk call at ${rate} Hz: tone both ways, a digit, nothing queued ahead, listed as audiosocket`, async () => {
      bot = await TestBot.start({ echo: true });
      const rig = await start({
        BOT_URL: bot.url,
        AUDIOSOCKET_ALLOW: '127.0.0.1',
        AUDIOSOCKET_TENANT: 'acme',
      });
      const call = new SyntheticCall({
        url: rig.bridge.audioSocketUrl!,
        sessionId: UUID.toUpperCase(),
        customerPhone: '15550100',
        direction: 'inbound',
        dialect: 'audiosocket',
        rate,
        audio: generateTone(440, rate, rate * 2, 0.5),
        dtmf: [{ digit: '5', atMs: 300 }],
        keepReceived: true,
        tailMs: 600,
      });
      const done = call.run();
      const conn = await bot.waitConnection();
      // The UUID in its lowercase 8-4-4-4-12 form, on the listener's tenant.
      expect(conn.sessionStart).toMatchObject({ session_id: UUID });
      await conn.waitEvent('dtmf', 3_000, (e) => e.digit === '5');
      const rest = await bridge!.restToken(['sessions:read'], 'acme');
      const list = (await (
        await fetch(`${bridge!.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
      ).json()) as { session_id: string; dialect: string }[];
      expect(list.map((s) => [s.session_id, s.dialect])).toEqual([[UUID, 'audiosocket']]);
      const report = await done;
      // The emulated Asterisk drops audio more than 60 ms ahead of its playout: none was.
      expect(report.breaches).toEqual([]);
      expect(report.state).toBe('ended');
      const atBot = conn.audioBytes();
      const botPcm = new Int16Array(atBot.buffer, atBot.byteOffset, atBot.length >> 1);
      const inSnr = steadyToneSnrDb(trimSilence(botPcm, 16000), 440, 16000)!;
      const outSnr = steadyToneSnrDb(trimSilence(report.received, rate), 440, rate)!;
      console.log(
        `audiosocket ${rate}: caller->bot SNR ${inSnr.toFixed(1)} dB, bot->caller SNR ${outSnr.toFixed(1)} dB`,
      );
      expect(inSnr).toBeGreaterThanOrEqual(30);
      expect(outSnr).toBeGreaterThanOrEqual(30);
      expect(report.secondsReceived).toBeGreaterThan(1.5);
      // Asterisk's hang-up (0x00) ends the call: the bot is told.
      await conn.waitEvent('session_end', 3_000);
    });
  }

  it('paces bot audio at 20 ms a message with nothing ahead of real time; a mark is played once its audio was sent and the lead passed; the bot hangs up with 0x00', async () => {
    bot = await TestBot.start({ echo: false });
    const rig = await startElsewhere({
      BOT_URL: bot.url,
      AUDIOSOCKET_ALLOW: '127.0.0.1',
      PACE_LEAD_MS: '40',
    });
    const a = new AsteriskSide();
    await a.opened;
    a.uuid(UUID);
    a.audio();
    const conn = await bot.waitConnection();

    // 4 s of bot audio at once leaves as 200 slin messages of 320 bytes, 20 ms apart.
    const watch = watchBridge(rig.process);
    conn.ws.send(tonePcm16(440, 16000, 64000));
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => a.of(0x10).length >= 200, 7_000, '4 s of bot audio');
    const burst = a.of(0x10).slice(0, 200);
    expect(burst.every((m) => m.payload.length === 320)).toBe(true);
    const { p50, p99, max, worst } = burstPacing(burst, 20, watch);
    // Nothing ahead of real time: message i arrives no earlier than i x 20 ms after the first, less the lead.
    const ahead = Math.max(...burst.map((m, i) => i * 20 - (m.at - burst[0]!.at)));
    console.log(
      `audiosocket: 4 s burst, inter-arrival p50 ${p50.toFixed(1)} p99 ${p99.toFixed(1)} max ${max.toFixed(1)} ms, furthest ahead of real time ${ahead.toFixed(1)} ms; ${worst}`,
    );
    expect(p99).toBeLessThanOrEqual(25);
    expect(ahead).toBeLessThanOrEqual(40 + 5);
    // The mark: played once its audio was sent and the lead passed, not before.
    const lastAt = burst[199]!.at;
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm1');
    expect(performance.now() - lastAt).toBeGreaterThanOrEqual(30);
    // No mark, clear or error message ever goes to Asterisk: only audio.
    expect(a.messages.every((m) => m.type === 0x10)).toBe(true);

    // Barge-in: the bot's clear drops what the bridge holds; a mark behind it is reported at once.
    conn.ws.send(tonePcm16(440, 16000, 32000));
    conn.send({ event: 'mark', name: 'm2' });
    await waitFor(() => a.of(0x10).length >= 210, 2_000, 'more bot audio');
    conn.send({ event: 'clear' });
    await conn.waitEvent('mark', 1_000, (e) => e.name === 'm2');
    const atClear = a.of(0x10).length;
    await quietFor(200, 'bot audio after the clear, beyond what was in flight');
    expect(a.of(0x10).length - atClear).toBeLessThanOrEqual(3);

    // The bot hangs up: its last audio plays out, then 0x00, then the socket closes.
    conn.ws.send(tonePcm16(440, 16000, 3200));
    const before = a.of(0x10).length;
    conn.send({ event: 'session_end', reason: 'done' });
    await waitFor(() => a.closed, 3_000, 'the socket to close');
    expect(a.of(0x10).length - before).toBe(10);
    expect(a.messages.at(-1)).toMatchObject({ type: 0x00, payload: Buffer.alloc(0) });
  });

  it('skips malformed messages or cuts only the stream that lost its framing; other calls go on', async () => {
    bot = await TestBot.start({ echo: true });
    await start({ BOT_URL: bot.url, AUDIOSOCKET_ALLOW: '127.0.0.1' });
    const a = new AsteriskSide();
    const b = new AsteriskSide();
    await Promise.all([a.opened, b.opened]);
    a.uuid(UUID);
    a.audio();
    const ca = await bot.waitConnection();
    b.uuid(UUID2);
    b.audio();
    const cb = await bot.waitConnection(1);
    expect(cb.sessionStart).toMatchObject({ session_id: UUID2 });

    // Skipped, the call unharmed: an odd byte count, audio of another rate, a bad digit, a second UUID.
    a.send(0x10, Buffer.alloc(321));
    a.audio(0x12, 320, 16000);
    a.send(0x03, Buffer.from('x'));
    a.uuid(UUID2);
    a.send(0x03, Buffer.from('7'));
    await ca.waitEvent('dtmf', 2_000, (e) => e.digit === '7');
    expect(ca.events.filter((e) => e.event === 'dtmf').length).toBe(1);
    const heard = ca.audioBytesSoFar;
    for (let i = 0; i < 5; i++) a.audio();
    await waitFor(() => ca.audioBytesSoFar > heard, 2_000, 'caller audio after the bad messages');
    // Nothing went back to Asterisk for them (it would end the call on any message but audio).
    expect(a.messages.filter((m) => m.type !== 0x10)).toEqual([]);
    const bad = await (await fetch(`${bridge!.http}/metrics`)).text();
    expect(bad).toMatch(/bad_frames_total\{code="odd_length"\} 1/);

    // A length that lied puts the stream out of step (a type byte the protocol does not have): that
    // connection is cut and its call ended; the other call goes on.
    a.socket.write(Buffer.from([0x10, 0x00, 0x02, 0x01, 0x02, 0x42, 0x00, 0x00]));
    await waitFor(() => a.closed, 2_000, 'the out-of-step stream to be cut');
    await ca.waitEvent('session_end', 2_000);
    const bHeard = cb.audioBytesSoFar;
    for (let i = 0; i < 5; i++) b.audio();
    await waitFor(() => cb.audioBytesSoFar > bHeard, 2_000, 'the other call still carried');
    expect(b.closed).toBe(false);

    // A message cut short by the close is dropped; the call ends as lost, the listener takes the next.
    b.socket.end(Buffer.from([0x10, 0x01, 0x40, 0x00, 0x00]));
    await cb.waitEvent('session_end', 2_000);
    const c = new AsteriskSide();
    await c.opened;
    c.uuid(UUID);
    c.audio();
    const cc = await bot.waitConnection(2);
    expect(cc.sessionStart).toMatchObject({ session_id: UUID });
  });

  it('caps connections with MAX_SESSIONS and, on shutdown, ends live calls: the bot told, the socket closed', async () => {
    bot = await TestBot.start({ echo: true });
    const rig = await start(
      { BOT_URL: bot.url, AUDIOSOCKET_ALLOW: '127.0.0.1', MAX_SESSIONS: '1', DRAIN_TIMEOUT_MS: '0' },
      'warn',
    );
    const a = new AsteriskSide();
    await a.opened;
    a.uuid(UUID);
    a.audio();
    const conn = await bot.waitConnection();
    const b = new AsteriskSide();
    await b.opened;
    await waitFor(() => b.closed, 2_000, 'the connection past MAX_SESSIONS to be cut');
    expect(rig.logs.some((l) => l.includes('"code":"capacity"'))).toBe(true);
    expect(a.closed).toBe(false);
    await rig.close();
    await waitFor(() => a.closed, 3_000, 'the live call to be closed on shutdown');
    await conn.waitEvent('session_end', 2_000);
  });

  it('ends a call whose Asterisk sent nothing for a whole heartbeat period; one that streams stays', async () => {
    bot = await TestBot.start({ echo: true });
    await start({ BOT_URL: bot.url, AUDIOSOCKET_ALLOW: '127.0.0.1', HEARTBEAT_INTERVAL_MS: '1000' });
    const quiet = new AsteriskSide();
    const live = new AsteriskSide();
    await Promise.all([quiet.opened, live.opened]);
    quiet.uuid(UUID);
    quiet.audio();
    live.uuid(UUID2);
    live.audio();
    const streaming = setInterval(() => live.audio(), 20);
    try {
      await bot.waitConnection(1);
      await waitFor(() => quiet.closed, 4_000, 'the silent peer to be ended');
      expect(live.closed).toBe(false);
      const ended = bot.connections.find((c) => c.sessionStart?.session_id === UUID)!;
      await ended.waitEvent('session_end', 1_000);
      await quietFor(1_500, 'the streaming peer being ended');
      expect(live.closed).toBe(false);
    } finally {
      clearInterval(streaming);
    }
  });

  it('refuses a stream that does not begin with the UUID, or whose audio is at a rate the bridge does not take', async () => {
    bot = await TestBot.start({ echo: true });
    const rig = await start({ BOT_URL: bot.url, AUDIOSOCKET_ALLOW: '127.0.0.1' });
    const a = new AsteriskSide();
    await a.opened;
    a.audio();
    await waitFor(() => a.closed, 2_000, 'the stream without a UUID to close');
    expect(a.of(0xff).map((m) => m.payload.toString())).toEqual(['bad_session_start']);
    const b = new AsteriskSide();
    await b.opened;
    b.uuid(UUID);
    b.send(0x14, tonePcm16(440, 32000, 640));
    await waitFor(() => b.closed, 2_000, 'the 32 kHz stream to close');
    expect(b.of(0xff).length).toBe(1);
    expect(rig.bridge.ctx.sessions.count()).toBe(0);
  });
});
