/**
 * A flooding provider in a process of its own (flood-peer-main.ts, forked with tsx), driven from a test:
 * open a call, flood it (a chunk of audio and `bad` bad frames every tick), stop reading and read again,
 * and report what it sent and received. The flood then costs the test process nothing, so a
 * control call measured here judges the bridge alone.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('./flood-peer-main.ts', import.meta.url));

export type FloodPeerRequest =
  | { type: 'open'; id: number; url: string; token: string; sessionId: string; sampleRate: number }
  | { type: 'flood'; id: number; bad: number; tickMs: number; maxTicks: number }
  | { type: 'stop' | 'pause' | 'resume' | 'report' | 'exit'; id: number };

/** What the peer has done and seen so far. */
export interface FloodPeerReport {
  readonly type: 'report';
  readonly id: number;
  /** Ticks sent (one chunk of audio each), and the bad frames sent with them. */
  readonly ticks: number;
  readonly bad: number;
  /** Audio chunks received from the bridge. */
  readonly audio: number;
  /** `error` events received, by code. */
  readonly errors: Record<string, number>;
  readonly closeCode: number | undefined;
  readonly closeReason: string;
  /** Set when `open` failed. */
  readonly failed?: string;
}

type Without<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export class FloodPeer {
  readonly #child: ChildProcess;
  #next = 0;

  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  /** Forks the peer and opens a call on `url` as `sessionId`: slin at `sampleRate`, base64 media events. */
  static async open(o: {
    url: string;
    token: string;
    sessionId: string;
    sampleRate?: number;
  }): Promise<FloodPeer> {
    const child = fork(MAIN, [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const peer = new FloodPeer(child);
    const r = await peer.#ask({ type: 'open', ...o, sampleRate: o.sampleRate ?? 16000 });
    if (r.failed !== undefined) {
      await peer.close();
      throw new Error(`the flooding peer could not open its call: ${r.failed}`);
    }
    return peer;
  }

  /** Starts the flood: every `tickMs` (20), a chunk of audio and `bad` bad frames, `maxTicks` times. */
  flood(o: { bad?: number; tickMs?: number; maxTicks: number }): Promise<FloodPeerReport> {
    return this.#ask({ type: 'flood', bad: 0, tickMs: 20, ...o });
  }

  stop(): Promise<FloodPeerReport> {
    return this.#ask({ type: 'stop' });
  }

  /** Stops reading its socket (the bridge's writes to it pile up in the kernel, then in the bridge). */
  pause(): Promise<FloodPeerReport> {
    return this.#ask({ type: 'pause' });
  }

  resume(): Promise<FloodPeerReport> {
    return this.#ask({ type: 'resume' });
  }

  report(): Promise<FloodPeerReport> {
    return this.#ask({ type: 'report' });
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = once(this.#child, 'exit');
    this.#child.send({ type: 'exit', id: this.#next++ });
    const t = setTimeout(() => this.#child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(t);
  }

  #ask(r: Without<FloodPeerRequest, 'id'>): Promise<FloodPeerReport> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const onMessage = (m: FloodPeerReport) => {
        if (m.id !== id) return;
        this.#child.off('message', onMessage);
        this.#child.off('exit', onExit);
        resolve(m);
      };
      const onExit = (code: number | null) => {
        this.#child.off('message', onMessage);
        reject(new Error(`the flooding peer exited (${code}) before answering ${r.type}`));
      };
      this.#child.on('message', onMessage);
      this.#child.once('exit', onExit);
      this.#child.send({ ...r, id });
    });
  }
}
