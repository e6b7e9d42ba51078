/**
 * The set-up fault tests share: a bridge in a process of its own (the rig's `process: true`, rig.ts) whose
 * bot is a ChaosBot here, a healthy control call beside the faulty ones (its audio measured here), the
 * bridge's log lines and its metrics by name. The bridge is elsewhere so that the control call's gaps are
 * the bridge's: a fault that stalls it shows, and only this (receiving) process's own stalls are excused
 * (schedstat.ts). One rig per test file; `close()` in afterEach tears everything down.
 */
import { performance } from 'node:perf_hooks';
import { expect } from 'vitest';
import { type BridgeWatch, watchBridge } from './bridge-process.js';
import { ChaosBot } from './chaos-bot.js';
import { ControlCall } from './control-call.js';
import { TestProvider } from './provider.js';
import { type ProcessRig, startRig } from './rig.js';
import { waitFor } from './wait.js';

/** The bridge's log lines (JSON, at `info`), read from its output as they come. */
export interface BridgeLog {
  readonly lines: Record<string, unknown>[];
  /** Lines whose message matches `msg` (and, when given, whose session_id is `sessionId`). */
  find(msg: RegExp, sessionId?: string): Record<string, unknown>[];
}

export class FaultRig {
  #bridge: ProcessRig | undefined;
  #bot: ChaosBot | undefined;
  #control: ControlCall | undefined;
  /** What the bridge went through since the control call started (for a failing check's message). */
  #watch: BridgeWatch | undefined;
  readonly #providers: TestProvider[] = [];

  get bridge(): ProcessRig {
    if (this.#bridge === undefined) throw new Error('fault rig not started');
    return this.#bridge;
  }
  get bot(): ChaosBot {
    if (this.#bot === undefined) throw new Error('fault rig not started');
    return this.#bot;
  }
  get control(): ControlCall {
    if (this.#control === undefined) throw new Error('fault rig not started');
    return this.#control;
  }

  /** Starts the bot, the bridge (with `env`) and the control call, and waits for its audio to flow. */
  async start(env: Record<string, string> = {}): Promise<BridgeLog> {
    this.#bot = await ChaosBot.start();
    const bridge = await startRig({
      process: true,
      env: { BOT_URL: this.#bot.url(), LOG_LEVEL: 'info', ...env },
    });
    this.#bridge = bridge;
    this.#control = await ControlCall.start(bridge.mediaUrl, await bridge.mediaToken(), 'control-1');
    this.#watch = watchBridge(bridge.process);
    await waitFor(() => this.control.provider.audio.length >= 10, 5_000, 'control audio to flow');
    return {
      get lines() {
        return bridge.logLines();
      },
      find: (msg, sessionId) =>
        bridge
          .logLines()
          .filter((l) => msg.test(String(l.msg)) && (sessionId === undefined || l.session_id === sessionId)),
    };
  }

  /** A provider call on the bridge (closed with the rig). */
  async call(id: string, media?: Record<string, unknown>): Promise<TestProvider> {
    const p = new TestProvider(this.bridge.mediaUrl, { token: await this.bridge.mediaToken() });
    this.#providers.push(p);
    await p.start(id, media === undefined ? {} : { media });
    return p;
  }

  /** A metric's value (GET /metrics) summed over its series, or over those with `label`. */
  metric(name: string, label?: [string, string]): Promise<number> {
    return this.bridge.metric(name, label);
  }

  /** The live session `id` of tenant "default" as GET /v1/sessions/{id} shows it; undefined once gone. */
  async session(id: string): Promise<Record<string, unknown> | undefined> {
    const res = await fetch(`${this.bridge.http}/v1/sessions/${encodeURIComponent(id)}`, {
      headers: { authorization: `Bearer ${await this.bridge.restToken(['sessions:read'])}` },
    });
    if (res.status === 404) return undefined;
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  }

  /** The control call over [from, now]: chunks due at 20 ms, at least 85 % arrived, no gap over 100 ms. */
  expectControlFlowed(from: number): void {
    const w = this.control.window(from);
    const due = (performance.now() - from) / 20;
    console.log(
      `control call: ${w.chunks} of ~${Math.round(due)} chunks, max gap ${w.maxGapMs.toFixed(1)} ms; ${w.worst}; ${this.#watch?.describe(from, performance.now(), w.worstAt)}`,
    );
    expect(w.chunks).toBeGreaterThanOrEqual(Math.floor(due * 0.85));
    expect(w.maxGapMs).toBeLessThan(100);
  }

  async close(): Promise<void> {
    this.#control?.close();
    for (const p of this.#providers.splice(0)) p.close();
    await this.#bridge?.close();
    await this.#bot?.close();
    this.#bridge = undefined;
    this.#bot = undefined;
    this.#control = undefined;
    this.#watch = undefined;
  }
}
