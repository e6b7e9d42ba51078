/**
 * The set-up fault tests share: a bridge (the rig, rig.ts) whose bot is a ChaosBot, a healthy control call beside the
 * faulty ones (its audio measured), captured logs, and the bridge's metrics by name. One rig per test
 * file; `close()` in afterEach tears everything down.
 */
import { performance } from 'node:perf_hooks';
import { expect } from 'vitest';
import { ChaosBot } from './chaos-bot.js';
import { ControlCall } from './control-call.js';
import { type CapturedLog, captureLog } from './log-capture.js';
import { TestProvider } from './provider.js';
import { type InProcessRig, startRig } from './rig.js';
import { waitFor } from './wait.js';

export class FaultRig {
  #bridge: InProcessRig | undefined;
  #bot: ChaosBot | undefined;
  #control: ControlCall | undefined;
  readonly #providers: TestProvider[] = [];

  get bridge(): InProcessRig {
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
  async start(env: Record<string, string> = {}): Promise<CapturedLog> {
    this.#bot = await ChaosBot.start();
    const logs = captureLog('info');
    this.#bridge = await startRig({ env: { BOT_URL: this.#bot.url(), ...env }, log: logs.log });
    this.#control = await ControlCall.start(
      this.#bridge.mediaUrl,
      await this.#bridge.mediaToken(),
      'control-1',
    );
    await waitFor(() => this.control.provider.audio.length >= 10, 5_000, 'control audio to flow');
    return logs;
  }

  /** A provider call on the bridge (closed with the rig). */
  async call(id: string, media?: Record<string, unknown>): Promise<TestProvider> {
    const p = new TestProvider(this.bridge.mediaUrl, { token: await this.bridge.mediaToken() });
    this.#providers.push(p);
    await p.start(id, media === undefined ? {} : { media });
    return p;
  }

  /** A metric's value summed over its series, or over those with `label`. */
  async metric(name: string, label?: [string, string]): Promise<number> {
    const m = this.bridge.bridge.ctx.metrics.registry.getSingleMetric(name);
    return (await m!.get()).values
      .filter((v) => label === undefined || v.labels[label[0]] === label[1])
      .reduce((a, v) => a + v.value, 0);
  }

  /** The control call over [from, now]: chunks due at 20 ms, at least 85 % arrived, no gap over 100 ms. */
  expectControlFlowed(from: number): void {
    const w = this.control.window(from);
    const due = (performance.now() - from) / 20;
    console.log(
      `control call: ${w.chunks} of ~${Math.round(due)} chunks, max gap ${w.maxGapMs.toFixed(1)} ms`,
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
  }
}
