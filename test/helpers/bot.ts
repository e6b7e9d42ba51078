/**
 * A test bot: a real ws server on 127.0.0.1 that the bridge dials. Records what each connection
 * receives; by default echoes audio back (like a bot that repeats the caller).
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { waitFor } from './wait.js';

export class BotConnection {
  readonly audio: Buffer[] = [];
  /** Audio bytes received so far. */
  audioBytesSoFar = 0;
  readonly events: { at: number; event: string; [k: string]: unknown }[] = [];
  closed = false;

  constructor(
    readonly ws: WebSocket,
    echo: boolean,
  ) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        this.audio.push(data);
        this.audioBytesSoFar += data.length;
        if (echo) ws.send(data);
      } else {
        const ev = JSON.parse(data.toString('utf8')) as { event: string };
        this.events.push({ ...ev, at: performance.now(), audioBytesBefore: this.audioBytesSoFar });
      }
    });
    ws.on('close', () => {
      this.closed = true;
    });
    ws.on('error', () => {});
  }

  get sessionStart() {
    return this.events.find((e) => e.event === 'session_start');
  }

  send(obj: unknown): void {
    this.ws.send(JSON.stringify(obj));
  }

  async waitEvent(
    event: string,
    timeoutMs = 5_000,
    pred: (e: Record<string, unknown>) => boolean = () => true,
  ) {
    await waitFor(
      () => this.events.some((e) => e.event === event && pred(e)),
      timeoutMs,
      `bot event ${event}`,
    );
    return this.events.find((e) => e.event === event && pred(e))!;
  }

  audioBytes(): Buffer {
    return Buffer.concat(this.audio);
  }
}

export class TestBot {
  readonly wss: WebSocketServer;
  readonly connections: BotConnection[] = [];
  /** Whether new connections echo audio back. */
  echo: boolean;

  private constructor(wss: WebSocketServer, echo: boolean) {
    this.wss = wss;
    this.echo = echo;
    wss.on('connection', (ws) => this.connections.push(new BotConnection(ws, this.echo)));
  }

  /** Upgrades waiting for `answer()` (with `holdUpgrades`): a bot slow to pick up. */
  #waiting: (() => void)[] = [];

  static async start(
    options: { echo?: boolean; port?: number; autoPong?: boolean; holdUpgrades?: boolean } = {},
  ): Promise<TestBot> {
    const waiting: (() => void)[] = [];
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: options.port ?? 0,
      autoPong: options.autoPong ?? true,
      ...(options.holdUpgrades === true && {
        verifyClient: (_info: unknown, done: (ok: boolean) => void) => waiting.push(() => done(true)),
      }),
    });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    const bot = new TestBot(wss, options.echo ?? true);
    bot.#waiting = waiting;
    return bot;
  }

  /** Upgrades held so far (`holdUpgrades`). */
  get upgradesWaiting(): number {
    return this.#waiting.length;
  }

  /** Completes the held upgrades. */
  answer(): void {
    for (const done of this.#waiting.splice(0)) done();
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}`;
  }

  async waitConnection(index = 0, timeoutMs = 5_000): Promise<BotConnection> {
    await waitFor(() => this.connections.length > index, timeoutMs, `bot connection ${index}`);
    const c = this.connections[index]!;
    await c.waitEvent('session_start', timeoutMs);
    return c;
  }

  /** Drops every connection (a bot crash) without closing the server. */
  dropAll(): void {
    for (const c of this.connections) c.ws.terminate();
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
