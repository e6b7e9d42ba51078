/**
 * A misbehaving bot for fault tests: one real ws server on 127.0.0.1 whose connections behave by the
 * call's session_id prefix, so one bridge can carry a faulty call and a healthy control call at once:
 *   `stall-…`  stops reading its socket after session_start (the bridge's sends back up);
 *   `flood-…`  sends `floodSecondsPerSecond` seconds of audio every second for `floodForMs`;
 *   anything else echoes the caller's audio back.
 * `stopListening()` makes new dials fail (connection refused) while live connections go on.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { waitFor } from './wait.js';

export class ChaosConnection {
  sessionId = '';
  bytesIn = 0;
  bytesOut = 0;
  readonly events: Record<string, unknown>[] = [];
  closed = false;
  /** A flood connection's flood is over (its last burst sent). */
  floodDone = false;
  #flood: NodeJS.Timeout | undefined;

  constructor(
    readonly ws: WebSocket,
    readonly socket: Socket,
    bot: ChaosBot,
  ) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        this.bytesIn += data.length;
        if (!this.sessionId.startsWith('flood-') && ws.readyState === WebSocket.OPEN) {
          ws.send(data);
          this.bytesOut += data.length;
        }
        return;
      }
      const ev = JSON.parse(data.toString()) as Record<string, unknown>;
      this.events.push(ev);
      if (ev.event !== 'session_start') return;
      this.sessionId = String(ev.session_id);
      const rate = Number((ev.media as { sample_rate?: number } | undefined)?.sample_rate ?? 16000);
      if (this.sessionId.startsWith('stall-')) socket.pause();
      if (this.sessionId.startsWith('flood-')) this.#startFlood(rate, bot);
    });
    ws.on('close', () => {
      this.closed = true;
      clearInterval(this.#flood);
    });
    ws.on('error', () => {});
  }

  #startFlood(rate: number, bot: ChaosBot): void {
    // One second of a 300 Hz tone at the bot's rate, sent `floodSecondsPerSecond` times a second.
    const second = Buffer.alloc(rate * 2);
    for (let i = 0; i < rate; i++)
      second.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / rate)), i * 2);
    const until = Date.now() + bot.floodForMs;
    const burst = () => {
      if (Date.now() >= until || this.ws.readyState !== WebSocket.OPEN) {
        clearInterval(this.#flood);
        this.floodDone = true;
        return;
      }
      for (let i = 0; i < bot.floodSecondsPerSecond; i++) {
        this.ws.send(second);
        this.bytesOut += second.length;
      }
    };
    burst();
    this.#flood = setInterval(burst, 1000);
  }
}

export class ChaosBot {
  readonly connections: ChaosConnection[] = [];
  floodSecondsPerSecond = 30;
  floodForMs = 3_000;
  readonly #server: Server;
  readonly #wss: WebSocketServer;

  private constructor(server: Server, wss: WebSocketServer) {
    this.#server = server;
    this.#wss = wss;
    server.on('upgrade', (req, socket, head) => {
      wss.handleUpgrade(req, socket, head, (ws) => {
        this.connections.push(new ChaosConnection(ws, socket as Socket, this));
      });
    });
  }

  static async start(): Promise<ChaosBot> {
    const server = createServer();
    const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return new ChaosBot(server, wss);
  }

  readonly url = (): string => `ws://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;

  /** The latest connection for `sessionId`, once its session_start arrived. */
  async connection(sessionId: string, timeoutMs = 5_000): Promise<ChaosConnection> {
    const find = () => this.connections.findLast((c) => c.sessionId === sessionId && !c.closed);
    await waitFor(() => find() !== undefined, timeoutMs, `bot connection for ${sessionId}`);
    return find()!;
  }

  /** New dials are refused from now on; live connections go on. */
  async stopListening(): Promise<void> {
    // close() stops accepting at once; its callback waits for live connections, which must go on.
    this.#server.close();
    await waitFor(() => !this.#server.listening, 2_000, 'the bot to stop listening');
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.ws.terminate();
    this.#wss.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => {
      if (!this.#server.listening) resolve();
      else this.#server.close(() => resolve());
    });
  }
}
