/**
 * The outbound writer against fake sockets and a hand-driven clock: bounds, backpressure, marks, clear,
 * and, on a real pacing loop, the timers it keeps on the loop's clock (marks it reports by its own
 * reckoning, the hang-up's wait and bound, the idle flush). (The same rules end to end, over real
 * sockets and at real time, are in audio-path.test.ts and mark-rule.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { resolveFormat } from '../../src/media/format.js';
import { type CallerEvent, Markers } from '../../src/media/markers.js';
import { type OutboundWire, OutboundWriter } from '../../src/media/outbound.js';
import { PacingLoop } from '../../src/media/pacing-loop.js';
import { DefaultWire } from '../../src/media/providers/default.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { ManualClock } from '../helpers/clock.js';

class FakeSocket {
  readyState: number = WebSocket.OPEN;
  bufferedAmount = 0;
  readonly sent: (Buffer | string)[] = [];
  send(data: Buffer | string): void {
    // A copy: with bufferedAmount 0 the bytes have left, as on a real socket, and the buffer is free.
    this.sent.push(typeof data === 'string' ? data : Buffer.from(data));
  }
  audio(): Buffer[] {
    return this.sent.filter((d): d is Buffer => typeof d !== 'string');
  }
  texts(): string[] {
    return this.sent.filter((d): d is string => typeof d === 'string');
  }
}

const format = resolveFormat({ codec: 'slin', sample_rate: 8000 }, undefined); // 320-byte, 20 ms chunks

let clock = 0;
/** A loop that never wakes: these tests service the writer by hand, at the times they choose. */
const byHand = { now: () => clock, wakeBy: () => {} };

function queue(metrics: Metrics, bufferMs = 60_000, highWaterBytes = 64 * 1024) {
  const ws = new FakeSocket();
  const marks = new Markers<CallerEvent>();
  const hungUp: string[] = [];
  const q = new OutboundWriter(ws as unknown as WebSocket, {
    format,
    leadMs: 40,
    bufferMs,
    highWaterBytes,
    metrics,
    loop: byHand,
    marks,
    onHangup: (reason) => hungUp.push(reason),
  });
  return { ws, q, marks, hungUp };
}

async function counter(metrics: Metrics, name: string, label: string): Promise<number> {
  const m = await metrics.registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.values(v.labels).includes(label)).reduce((s, v) => s + v.value, 0);
}

describe('OutboundWriter', () => {
  it('holds at most bufferMs of audio and counts what it sheds', async () => {
    clock = 0;
    const metrics = createMetrics();
    const { q } = queue(metrics, 1000);
    q.push(Buffer.alloc(16_000 * 5)); // 5 s of 8 kHz PCM16 into a 1 s queue
    expect(q.queuedBytes).toBeLessThanOrEqual(16_000);
    expect(await counter(metrics, 'voicebridge_shed_chunks_total', 'buffer_full')).toBeGreaterThanOrEqual(
      200 - 50,
    );
  });

  it('sheds stale audio on a socket past its high-water mark, without slowing another session', async () => {
    const metrics = createMetrics();
    const slow = queue(metrics, 60_000, 4096);
    const fast = queue(metrics, 60_000, 4096);
    clock = 0;
    slow.ws.bufferedAmount = 1_000_000; // the provider stopped reading
    const second = Buffer.alloc(16_000);
    slow.q.push(second);
    fast.q.push(second);
    for (clock = 0; clock <= 2000; clock += 5) {
      slow.q.service(clock);
      fast.q.service(clock);
    }
    expect(slow.ws.audio()).toHaveLength(0);
    expect(slow.q.queuedBytes).toBe(0); // shed at the schedule's pace, not held
    expect(await counter(metrics, 'voicebridge_shed_chunks_total', 'backpressure')).toBe(50);
    expect(fast.ws.audio()).toHaveLength(50); // unaffected
    // Once the socket drains, audio flows again.
    slow.ws.bufferedAmount = 0;
    clock = 3000;
    slow.q.push(Buffer.alloc(640));
    expect(slow.ws.audio()).toHaveLength(2);
  });

  it('sends a mark only after the audio before it; the tail, where the audio ends, leaves padded', () => {
    clock = 0;
    const { ws, q } = queue(createMetrics());
    q.push(Buffer.alloc(320 * 5 + 100, 7));
    q.mark('m1');
    expect(ws.audio()).toHaveLength(3); // the lead: 40 ms ahead
    expect(ws.texts()).toEqual([]); // the audio before it has not all left
    for (clock = 0; clock <= 200; clock += 5) q.service(clock);
    const audio = ws.audio();
    expect(audio).toHaveLength(6);
    expect(audio.every((c) => c.length === 320)).toBe(true);
    expect(audio[5]!.subarray(0, 100).every((b) => b === 7)).toBe(true);
    expect(audio[5]!.subarray(100).every((b) => b === 0)).toBe(true); // slin silence
    expect(ws.sent[ws.sent.length - 1]).toBe('{"event":"mark","name":"m1"}');
  });

  it('a frame the socket still holds (bufferedAmount > 0) is never reused for the next chunk', () => {
    clock = 0;
    const { ws, q } = queue(createMetrics());
    // A socket that keeps what it is given, unsent, as a real one does while its buffer drains.
    const held: Buffer[] = [];
    ws.bufferedAmount = 320;
    ws.send = (data: Buffer | string) => {
      if (typeof data !== 'string') held.push(data);
    };
    for (let i = 1; i <= 5; i++) q.push(Buffer.alloc(320, i));
    for (clock = 0; clock <= 200; clock += 5) q.service(clock);
    expect(held.map((b) => b[0])).toEqual([1, 2, 3, 4, 5]);
    expect(held.every((b, i) => b.every((x) => x === i + 1))).toBe(true);
  });

  it('a whole chunk into an empty queue leaves at once as a copy, with marks between chunks in their place', () => {
    clock = 0;
    const { ws, q } = queue(createMetrics());
    const held: Buffer[] = [];
    const order: string[] = [];
    ws.bufferedAmount = 320; // the socket keeps each frame it is given
    ws.send = (data: Buffer | string) => {
      if (typeof data === 'string') order.push(data);
      else {
        held.push(data);
        order.push(`audio ${data[0]}`);
      }
    };
    // One input buffer refilled for every chunk, as the pipeline's own output is.
    const input = Buffer.alloc(320);
    for (let i = 1; i <= 4; i++) {
      input.fill(i);
      q.push(input);
      expect(held).toHaveLength(i); // left from the push itself: it was due
      if (i === 2) q.mark('after-2');
      clock += 20;
      q.service(clock);
    }
    expect(held.every((b, k) => b.every((x) => x === k + 1))).toBe(true);
    expect(order).toEqual(['audio 1', 'audio 2', '{"event":"mark","name":"after-2"}', 'audio 3', 'audio 4']);
    expect(q.empty).toBe(true);
  });

  it('after a long pause, a short piece of audio before a mark waits half the lead for more, as at a start', () => {
    clock = 0;
    const { ws, q } = queue(createMetrics());
    // Both chunks leave at once (within the lead); an emptied queue is not serviced again.
    q.push(Buffer.alloc(640, 1));
    expect(ws.audio()).toHaveLength(2);
    // Five seconds later (the loop does not service an empty queue meanwhile): 100 bytes, then a mark.
    clock = 5_000;
    q.push(Buffer.alloc(100, 2));
    q.mark('m');
    expect(ws.audio()).toHaveLength(2);
    expect(ws.texts()).toEqual([]);
    q.service(5_010);
    expect(ws.audio()).toHaveLength(2);
    q.service(5_025);
    expect(ws.audio()).toHaveLength(3);
    expect(ws.texts()).toEqual(['{"event":"mark","name":"m"}']);
  });

  it('several marks within one chunk insert no silence; only the end of the audio is padded', () => {
    clock = 0;
    const { ws, q, marks, hungUp } = queue(createMetrics());
    // A bot that marks every word: four 100-byte words, a mark after each of the first three.
    for (const name of ['w1', 'w2', 'w3']) {
      q.push(Buffer.alloc(100, 7));
      q.mark(name);
    }
    q.push(Buffer.alloc(100, 7));
    // The first three marks fall in the first chunk: they go right after it, no silence before it.
    expect(ws.audio()).toHaveLength(1);
    expect(ws.audio()[0]!.every((b) => b === 7)).toBe(true);
    expect(ws.texts()).toEqual(['w1', 'w2', 'w3'].map((n) => `{"event":"mark","name":"${n}"}`));
    // The last 80 bytes wait for more audio; the end of the bot's audio (its hang-up) pads them.
    for (clock = 0; clock <= 200; clock += 5) q.service(clock);
    expect(ws.audio()).toHaveLength(1);
    q.marker(marks.put({ event: 'session_end', reason: 'bye' }));
    for (; clock <= 400 && hungUp.length === 0; clock += 5) q.service(clock);
    expect(hungUp).toEqual(['bye']);
    const audio = Buffer.concat(ws.audio());
    expect(audio.length).toBe(640); // 400 bytes sent, rounded up to whole chunks only at the end
    expect(audio.subarray(0, 400).every((b) => b === 7)).toBe(true);
    expect(audio.subarray(400).every((b) => b === 0)).toBe(true);
  });

  it('paused by the provider, sends nothing, keeps it all in order, and on resume goes on paced, mark last', () => {
    clock = 0;
    const { ws, q } = queue(createMetrics());
    const audio = Buffer.alloc(320 * 20);
    for (let i = 0; i < 20; i++) audio.fill(i + 1, i * 320, (i + 1) * 320);
    q.push(audio);
    q.mark('m1');
    for (clock = 0; clock <= 100; clock += 5) q.service(clock);
    const atPause = ws.audio().length;
    expect(atPause).toBeGreaterThan(0);
    q.pause(true);
    for (; clock <= 1_000; clock += 5) q.service(clock);
    expect(ws.audio().length).toBe(atPause);
    expect(ws.texts()).toEqual([]);
    q.pause(false);
    // A fresh run: the lead at once, then one chunk every 20 ms, not a burst of all that waited.
    expect(ws.audio().length).toBe(atPause + 3);
    for (; clock <= 1_100; clock += 5) q.service(clock);
    expect(ws.audio().length).toBeLessThan(20);
    for (; clock <= 2_000; clock += 5) q.service(clock);
    const sent = ws.audio();
    expect(sent.map((c) => c[0])).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(ws.sent[ws.sent.length - 1]).toBe('{"event":"mark","name":"m1"}');
  });

  it('a mark with no audio queued goes at once; clear drops audio, sends clear, then waiting marks', () => {
    clock = 0;
    const { ws, q } = queue(createMetrics());
    q.mark('now');
    expect(ws.texts()).toEqual(['{"event":"mark","name":"now"}']);
    q.push(Buffer.alloc(320 * 50));
    q.mark('after');
    const sentBefore = ws.audio().length;
    q.clear();
    expect(q.queuedBytes).toBe(0);
    expect(ws.texts().slice(1)).toEqual(['{"event":"clear"}', '{"event":"mark","name":"after"}']);
    q.service(10_000);
    expect(ws.audio().length).toBe(sentBefore);
  });

  it('sends clear only when audio was sent or queued since the last clear', () => {
    clock = 0;
    const { ws, q } = queue(createMetrics());
    q.clear(); // nothing ever sent: the provider holds none of ours
    expect(ws.texts()).toEqual([]);
    q.push(Buffer.alloc(320 * 2)); // sent at once (within the lead), nothing left queued
    expect(q.queuedBytes).toBe(0);
    q.clear(); // nothing dropped here, but the provider may still be playing it
    expect(ws.texts()).toEqual(['{"event":"clear"}']);
    q.clear(); // nothing since
    expect(ws.texts()).toEqual(['{"event":"clear"}']);
    q.push(Buffer.alloc(320 * 50));
    q.clear();
    expect(ws.texts()).toEqual(['{"event":"clear"}', '{"event":"clear"}']);
  });

  it('counts lateness the pacer caused, not audio that arrived after its earliest send time', async () => {
    clock = 0;
    const metrics = createMetrics();
    const { ws, q } = queue(metrics);
    // Live audio (an echo): each chunk arrives at real time and leaves at once; none is late.
    for (let i = 0; i < 50; i++) {
      clock = i * 20 + 0.3;
      q.push(Buffer.alloc(320));
    }
    expect(ws.audio()).toHaveLength(50);
    expect((await metrics.lateChunks.get()).values[0]?.value ?? 0).toBe(0);
    // A burst the loop then serves 50 ms late: those chunks are late.
    clock = 5000;
    q.push(Buffer.alloc(320 * 10));
    clock = 5000 + 3 * 20 - 40 + 50;
    q.service(clock);
    expect((await metrics.lateChunks.get()).values[0]?.value).toBeGreaterThan(0);
  });

  it('sends base64 media events in base64 encoding', () => {
    const ws = new FakeSocket();
    const f = resolveFormat({ codec: 'pcmu', encoding: 'base64' }, undefined);
    const q = new OutboundWriter(ws as unknown as WebSocket, {
      format: f,
      leadMs: 0,
      bufferMs: 1000,
      highWaterBytes: 65536,
      metrics: createMetrics(),
      loop: byHand,
    });
    q.push(Buffer.alloc(200, 0x55));
    const [text] = ws.texts();
    const ev = JSON.parse(text!) as { event: string; payload: string };
    expect(ev.event).toBe('media');
    expect(Buffer.from(ev.payload, 'base64')).toEqual(Buffer.alloc(160, 0x55));
  });
  it("a dialect's idle flush: a partial chunk leaves padded once the bot's audio pauses that long, not before", () => {
    clock = 0;
    const ws = new FakeSocket();
    const binary: OutboundWire = {
      textAudio: false,
      idleFlushMs: 100,
      audioText: () => '',
      markFrame: (n) => `mark:${n}`,
      clearFrame: () => 'clear',
      dtmfFrame: () => undefined,
      errorFrame: () => undefined,
      hangupFrame: () => undefined,
    };
    // When the bridge was last held up, set by hand (src/held-up.ts watches the real event loop).
    let watching = 0;
    const heldUp = {
      lastAt: Number.NEGATIVE_INFINITY,
      watch: () => {
        watching++;
        return () => {
          watching--;
        };
      },
    };
    const q = new OutboundWriter(ws as unknown as WebSocket, {
      format,
      leadMs: 40,
      bufferMs: 60_000,
      highWaterBytes: 65_536,
      metrics: createMetrics(),
      loop: byHand,
      wire: binary,
      heldUp,
    });
    q.push(Buffer.alloc(320 + 100, 7));
    q.mark('m1'); // a mark waiting does not pad it sooner (without an idle flush it would, at 20 ms)
    for (clock = 0; clock < 90; clock += 5) q.service(clock);
    expect(ws.audio()).toHaveLength(1); // 85 ms of pause: the partial still waits for more
    expect(ws.texts()).toEqual([]);
    clock = 90;
    q.push(Buffer.alloc(100, 8)); // more comes: the pause starts again
    for (; clock < 185; clock += 5) q.service(clock);
    expect(ws.audio()).toHaveLength(1);
    for (; clock <= 200; clock += 5) q.service(clock);
    const audio = ws.audio();
    expect(audio).toHaveLength(2);
    expect(audio[1]!.subarray(0, 100).every((b) => b === 7)).toBe(true);
    expect(audio[1]!.subarray(100, 200).every((b) => b === 8)).toBe(true);
    expect(audio[1]!.subarray(200).every((b) => b === 0)).toBe(true); // padded with slin silence
    expect(ws.texts()).toEqual(['mark:m1']);
    // A stall: the process wakes 300 ms late, its timer first. The audio that came meanwhile, read next,
    // joins the partial; none of it is padded on the timer's word alone.
    q.push(Buffer.alloc(100, 9));
    clock += 300;
    q.service(clock);
    expect(ws.audio()).toHaveLength(2);
    q.push(Buffer.alloc(220, 10));
    for (const end = clock + 20; clock <= end; clock += 5) q.service(clock);
    expect(ws.audio()).toHaveLength(3);
    expect(ws.audio()[2]!.equals(Buffer.concat([Buffer.alloc(100, 9), Buffer.alloc(220, 10)]))).toBe(true);
    // The bridge held up (its loop ran late, or a DSP worker took long to answer): the hold-up delayed
    // the bot's next audio on its way too, so the pause counts from the hold-up, an idle time more; a
    // mark in between does not bring it forward, and audio 90 ms after the hold-up still joins the partial.
    q.push(Buffer.alloc(100, 11));
    const audioAt = clock;
    clock += 100 + 80; // the look comes 80 ms late
    heldUp.lastAt = clock;
    q.service(clock);
    q.service(clock + 1);
    clock += 30;
    q.mark('m2');
    q.service(clock);
    expect(ws.audio()).toHaveLength(3);
    clock += 60;
    q.service(clock);
    expect(ws.audio()).toHaveLength(3);
    q.push(Buffer.alloc(220, 12));
    expect(ws.audio()).toHaveLength(4);
    expect(ws.audio()[3]!.equals(Buffer.concat([Buffer.alloc(100, 11), Buffer.alloc(220, 12)]))).toBe(true);
    expect(clock - audioAt).toBeGreaterThan(2 * 100); // twice the idle time without audio, not padded
    // With nothing more, the partial leaves padded an idle time after the hold-up.
    q.push(Buffer.alloc(100, 13));
    clock += 100 + 40;
    heldUp.lastAt = clock;
    q.service(clock);
    q.service(clock + 1);
    expect(ws.audio()).toHaveLength(4);
    clock += 99;
    q.service(clock);
    expect(ws.audio()).toHaveLength(4);
    clock += 1;
    q.service(clock);
    expect(ws.audio()).toHaveLength(5);
    expect(
      ws
        .audio()[4]!
        .subarray(100)
        .every((b) => b === 0),
    ).toBe(true);
    // Held up again and again, it still pads three idle times after the bot's last audio.
    q.push(Buffer.alloc(100, 14));
    const lastAudio = clock;
    for (clock += 100; clock < lastAudio + 300; clock += 10) {
      heldUp.lastAt = clock;
      q.service(clock);
    }
    expect(ws.audio()).toHaveLength(5);
    q.service(clock);
    expect(ws.audio()).toHaveLength(6);
    // A hold-up older than the bot's last audio holds nothing off: padded at the second look. A mark
    // serviced between the two looks does not bring the second one forward.
    clock += 50;
    heldUp.lastAt = clock;
    clock += 1;
    q.push(Buffer.alloc(100, 15));
    clock += 100;
    q.service(clock);
    q.mark('m3');
    expect(ws.audio()).toHaveLength(6);
    clock += 1;
    q.service(clock);
    expect(ws.audio()).toHaveLength(7);
    expect(watching).toBe(1);
    q.close();
    expect(watching).toBe(0);
    // Without an idle flush (our own protocol's wire), a partial waits for more audio.
    const plain = queue(createMetrics());
    plain.q.push(Buffer.alloc(320 + 100, 7));
    for (; clock <= 2_000; clock += 5) plain.q.service(clock);
    expect(plain.ws.audio()).toHaveLength(1);
  });
});

/**
 * The writer as a member of a real pacing loop on a hand-driven clock: its timers (marks reported by the
 * bridge's own reckoning, the hang-up's wait and bound, the idle flush) are the loop's, and nothing else
 * runs them. Time passes only by `clock.advance`.
 */
describe('OutboundWriter on the pacing loop', () => {
  /** µ-law 8 kHz, 160-byte 20 ms chunks, our own protocol's frames. */
  const ulaw = resolveFormat({ codec: 'pcmu', sample_rate: 8000 }, undefined);

  function onLoop(o: { wire?: OutboundWire; hangupMaxMs?: number } = {}) {
    const manual = new ManualClock(0);
    const loop = new PacingLoop(1, manual);
    const ws = new FakeSocket();
    const arrivals: { at: number; bytes: number }[] = [];
    const send = ws.send.bind(ws);
    ws.send = (data: Buffer | string) => {
      if (typeof data !== 'string') arrivals.push({ at: manual.now(), bytes: data.length });
      send(data);
    };
    const marks = new Markers<CallerEvent>();
    const reports: { at: number; name: string; cleared: boolean }[] = [];
    const hungUp: { at: number; reason: string }[] = [];
    const q = new OutboundWriter(ws as unknown as WebSocket, {
      format: ulaw,
      leadMs: 40,
      catchUpMs: 1000,
      bufferMs: 60_000,
      highWaterBytes: 64 * 1024,
      metrics: createMetrics(),
      loop,
      marks,
      ...(o.wire !== undefined && { wire: o.wire }),
      ...(o.hangupMaxMs !== undefined && { hangupMaxMs: o.hangupMaxMs }),
      onMarkPlayed: (name, cleared) => reports.push({ at: manual.now(), name, cleared }),
      onHangup: (reason) => {
        hungUp.push({ at: manual.now(), reason });
        loop.delete(q);
      },
    });
    loop.add(q);
    /** When a caller playing what arrives, in order at real time, has played `bytes` bytes. */
    const playedAt = (bytes: number): number => {
      let end = Number.NEGATIVE_INFINITY;
      let pos = 0;
      for (const a of arrivals) {
        end = Math.max(end, a.at) + a.bytes / 8;
        pos += a.bytes;
        if (pos >= bytes) return end - (pos - bytes) / 8;
      }
      throw new Error(`${bytes} bytes never arrived`);
    };
    return { manual, loop, ws, q, marks, reports, hungUp, playedAt };
  }

  it("the issue's call: 1 s, m1, 0.5 s, m2 to a caller that never reports; each mark within 250 ms of its playout", () => {
    const t = onLoop();
    t.q.push(Buffer.alloc(8000, 0x55));
    t.q.mark('m1');
    t.q.push(Buffer.alloc(4000, 0x55));
    t.q.mark('m2');
    t.manual.advance(3_000);
    expect(t.reports.map((r) => r.name)).toEqual(['m1', 'm2']);
    for (const [i, bytes] of [8000, 12_000].entries()) {
      const played = t.playedAt(bytes);
      const at = t.reports[i]!.at;
      expect(at).toBeGreaterThanOrEqual(played);
      expect(at - played).toBeLessThanOrEqual(250);
    }
    // The provider got each mark's frame behind its audio, long before it played.
    expect(t.ws.texts()).toEqual(['{"event":"mark","name":"m1"}', '{"event":"mark","name":"m2"}']);
    t.loop.stop();
  });

  it("a caller that reports marks: its report is what the bot hears, at the caller's time", () => {
    const t = onLoop();
    t.q.push(Buffer.alloc(8000, 0x55));
    t.q.mark('m1');
    t.q.push(Buffer.alloc(4000, 0x55));
    t.q.mark('m2');
    // The caller reports m1 as it finishes playing it, and m2 300 ms after (its own buffer, say).
    t.manual.advance(1_000);
    t.q.reported('m1', false);
    t.manual.advance(800);
    expect(t.reports.map((r) => r.name)).toEqual(['m1']);
    t.q.reported('m2', false);
    expect(t.reports).toEqual([
      { at: 1_000, name: 'm1', cleared: false },
      { at: 1_800, name: 'm2', cleared: false },
    ]);
    t.manual.advance(5_000);
    expect(t.reports).toHaveLength(2);
    t.loop.stop();
  });

  it('a clear reports every pending mark cleared at once: awaiting its playout, queued, and still in the leg', () => {
    const t = onLoop();
    t.q.push(Buffer.alloc(1600, 0x55));
    t.q.mark('sent');
    t.q.push(Buffer.alloc(16_000, 0x55));
    t.q.mark('queued');
    // A mark still in the leg (a DSP worker's) when the clear comes: its token comes out later.
    const inFlight = t.marks.put({ event: 'mark', name: 'in-flight' });
    // 220 ms in: the first mark's audio has left and plays until 200 ms (its report is due at 250).
    t.manual.advance(220);
    expect(t.reports).toEqual([]);
    t.q.clear();
    expect(t.reports).toEqual([
      { at: 220, name: 'sent', cleared: true },
      { at: 220, name: 'queued', cleared: true },
      { at: 220, name: 'in-flight', cleared: true },
    ]);
    expect(t.ws.texts()).toEqual([
      '{"event":"mark","name":"sent"}',
      '{"event":"clear"}',
      '{"event":"mark","name":"queued"}',
    ]);
    t.q.marker(inFlight);
    t.q.reported('sent', true);
    t.q.reported('queued', true);
    t.manual.advance(5_000);
    expect(t.reports).toHaveLength(3);
    t.loop.stop();
  });

  it("the bot's hang-up waits for its audio to play out, not just to be sent, then the provider is told", () => {
    const t = onLoop();
    t.q.push(Buffer.alloc(8000, 0x55));
    t.q.marker(t.marks.put({ event: 'session_end', reason: 'goodbye' }));
    t.manual.advance(960);
    // Every chunk has left (the last at 940 ms, within the lead) but the caller plays until 1000 ms.
    expect(t.ws.audio()).toHaveLength(50);
    expect(t.hungUp).toEqual([]);
    t.manual.advance(100);
    expect(t.hungUp).toEqual([{ at: t.playedAt(8000), reason: 'goodbye' }]);
    expect(t.ws.sent.at(-1)).toBe('{"event":"session_end","reason":"goodbye"}');
  });

  it("the hang-up's bound: audio that cannot leave (the provider paused it) holds the call up no longer than hangupMaxMs", () => {
    const t = onLoop({ hangupMaxMs: 60_000 });
    t.q.pause(true);
    t.q.push(Buffer.alloc(8000, 0x55));
    t.q.marker(t.marks.put({ event: 'session_end', reason: 'bye' }));
    t.manual.advance(59_999);
    expect(t.hungUp).toEqual([]);
    t.manual.advance(1);
    expect(t.hungUp).toEqual([{ at: 60_000, reason: 'bye' }]);
    expect(t.ws.audio()).toHaveLength(0);
  });

  it("a dialect's idle flush: the partial chunk leaves padded once the bot's audio paused that long, on the loop's clock", () => {
    const base = DefaultWire.of(ulaw);
    const wire: OutboundWire = {
      textAudio: false,
      idleFlushMs: 250,
      audioText: () => '',
      markFrame: (n) => base.markFrame(n),
      clearFrame: () => base.clearFrame(),
      dtmfFrame: () => undefined,
      errorFrame: () => undefined,
      hangupFrame: () => undefined,
    };
    const t = onLoop({ wire });
    t.q.push(Buffer.alloc(160 * 3 + 100, 0x55));
    t.q.mark('end');
    t.manual.advance(100);
    expect(t.ws.audio()).toHaveLength(3);
    // More audio 100 ms in: the pause counts from it.
    t.q.push(Buffer.alloc(20, 0x55));
    t.manual.advance(249);
    expect(t.ws.audio()).toHaveLength(3);
    // 250 ms after the last audio the flush comes due; it looks once more on the loop's next turn.
    t.manual.advance(2);
    expect(t.ws.audio()).toHaveLength(4);
    expect(
      t.ws
        .audio()[3]!
        .subarray(120)
        .every((b) => b === 0xff),
    ).toBe(true); // µ-law silence
    t.manual.advance(1_000);
    expect(t.reports.map((r) => r.name)).toEqual(['end']);
    t.loop.stop();
  });
});
