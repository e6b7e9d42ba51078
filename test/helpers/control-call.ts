/**
 * A healthy control call for fault and fuzz tests: a 1 kHz tone sent at real time (the shared paced
 * caller's drift-free schedule) for as long as the test runs, its echo measured on arrival. It shows whether other calls'
 * faults harmed it: samples returned, gaps between arrivals in any window, and the tone's SNR.
 */
import { performance } from 'node:perf_hooks';
import { fitTone } from '../../src/audio/tone.js';
import { PacedSchedule } from '../../src/emulator/paced-caller.js';
import { quantile } from '../../src/emulator/stats.js';
import { pcm16Samples, tonePcm16 } from './audio.js';
import { interArrival, TestProvider } from './provider.js';
import { waitFor } from './wait.js';

const RATE = 8000;
const CHUNK_MS = 20;
const CHUNK_SAMPLES = (RATE * CHUNK_MS) / 1000;
const HZ = 1000;
/** One period-aligned second of tone (1 kHz at 8 kHz is 8 samples a period), reused chunk by chunk. */
const SECOND = tonePcm16(HZ, RATE, RATE);

export interface WindowStats {
  /** Audio chunks that arrived in the window. */
  readonly chunks: number;
  /**
   * The longest gap between arrivals in the window, less the time this process was stopped (nothing
   * subtracted while the bridge runs in this process: schedstat.ts).
   */
  readonly maxGapMs: number;
  readonly p99GapMs: number;
  /** Where the largest gap falls and where its time went in this process (see describeGap). */
  readonly worst: string;
  /** When the largest gap began and ended (performance.now()). */
  readonly worstAt: readonly [number, number] | undefined;
}

export class ControlCall {
  readonly provider: TestProvider;
  readonly #schedule: PacedSchedule;

  private constructor(provider: TestProvider) {
    this.provider = provider;
    // The shared paced caller's schedule: every chunk due by a wake-up goes out (catching up after a
    // stall of this process), for as long as the test runs.
    this.#schedule = new PacedSchedule({
      chunkMs: CHUNK_MS,
      chunks: Number.POSITIVE_INFINITY,
      send: (i) => {
        const off = ((i * CHUNK_SAMPLES) % RATE) * 2;
        provider.sendRaw(SECOND.subarray(off, off + CHUNK_SAMPLES * 2));
      },
    });
  }

  /** Opens the call, sends session_start (slin 8 kHz, 320-byte chunks) and starts the tone. */
  static async start(mediaUrl: string, token: string, sessionId: string): Promise<ControlCall> {
    const p = new TestProvider(mediaUrl, { token, sampleRunDelay: true });
    await p.start(sessionId, {
      media: { codec: 'slin', sample_rate: RATE, encoding: 'binary', chunk_bytes: CHUNK_SAMPLES * 2 },
    });
    const c = new ControlCall(p);
    c.#schedule.start();
    return c;
  }

  get sentSamples(): number {
    return this.#schedule.sent * CHUNK_SAMPLES;
  }

  get receivedSamples(): number {
    let n = 0;
    for (const a of this.provider.audio) n += a.data.length / 2;
    return n;
  }

  /** Arrivals and gaps between `from` and `to` (performance.now() times). */
  window(from: number, to = performance.now()): WindowStats {
    const inWindow = this.provider.audio.filter((a) => a.at >= from && a.at <= to);
    const { own, worst, worstAt } = interArrival(inWindow);
    return {
      worst,
      worstAt,
      chunks: inWindow.length,
      maxGapMs: own.length === 0 ? Number.POSITIVE_INFINITY : Math.max(...own),
      p99GapMs: own.length === 0 ? Number.POSITIVE_INFINITY : quantile(own, 0.99),
    };
  }

  /** Stops sending, waits (bounded) for the echo to catch up, and returns the totals. */
  async stop(): Promise<{ sentSamples: number; receivedSamples: number; snrDb: number }> {
    this.#schedule.stop();
    const sent = this.sentSamples;
    // The echo returns what was sent, less what the pacing lead and DSP still hold (a few chunks).
    await waitFor(() => this.receivedSamples >= sent - 8 * CHUNK_SAMPLES, 5_000, 'the control echo').catch(
      () => {},
    );
    const x = pcm16Samples(this.provider.audioBytes());
    const snrDb = x.length > 400 ? fitTone(x.subarray(200, x.length - 200), HZ, RATE).snrDb : 0;
    return { sentSamples: sent, receivedSamples: this.receivedSamples, snrDb };
  }

  close(): void {
    this.#schedule.stop();
    this.provider.close();
  }
}
