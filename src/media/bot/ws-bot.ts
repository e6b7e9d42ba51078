/**
 * A bot behind a WebSocket (`ws://` or `wss://`): dialled on session_start, told `session_start` with
 * `media` at the bot's rate, sent caller audio as binary frames; bot audio comes back as binary frames
 * plus mark, clear, dtmf and session_end events.
 *
 * A bot that cannot be reached, or drops mid-call, is redialled with bounded exponential backoff. The
 * call stays up meanwhile: caller audio is dropped (the bot hears a gap), the caller hears silence, and
 * the provider gets one `error` event when the bot is lost and one when the bridge gives up on it.
 */
import { randomFillSync } from 'node:crypto';
import WebSocket from 'ws';
import { BridgeError, isBridgeError } from '../../errors.js';
import { displayUrl, type Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import { errorFrame, parseBotEvent } from '../protocol.js';
import { type BotCall, type BotLeg, type BotNotice, botSessionStart, type CallerPort } from './types.js';

export interface WsBotOptions {
  readonly url: string;
  readonly botRate: number;
  readonly retries: number;
  readonly retryBaseMs: number;
  readonly connectTimeoutMs: number;
  readonly maxPayloadBytes: number;
  readonly highWaterBytes: number;
  readonly metrics: Metrics;
  readonly log: Logger;
}

/** Longest wait between redials. */
const RETRY_MAX_MS = 5_000;
/** Notices held while the bot is being dialled or redialled; older ones go first past this. */
const MAX_HELD_NOTICES = 32;

/**
 * Makes ws's `generateMask`: a client frame's masking key from `fill` (the CSPRNG, drawn 8 KB at a time
 * as ws itself does), never all zeros. ws masks a frame into a copy of its own, except under an
 * all-zero key, where it sends the caller's bytes as they are and the socket may hold them until
 * written. Audio reaches a bot as a view into a buffer the DSP pipeline reuses (src/pipeline/types.ts),
 * so every frame must be copied; redrawing the 1-in-2^32 zero key keeps that so. (The other case where
 * ws keeps a caller's bytes is compression, which the bot socket turns off.)
 */
export function nonZeroMasks(fill: (pool: Buffer) => void = randomFillSync): (mask: Buffer) => void {
  const pool = Buffer.alloc(8192);
  let at = pool.length;
  return (mask) => {
    do {
      if (at + 4 > pool.length) {
        fill(pool);
        at = 0;
      }
      mask[0] = pool[at]!;
      mask[1] = pool[at + 1]!;
      mask[2] = pool[at + 2]!;
      mask[3] = pool[at + 3]!;
      at += 4;
    } while ((mask[0]! | mask[1]! | mask[2]! | mask[3]!) === 0);
  };
}

const nonZeroMask = nonZeroMasks();

export class WsBot implements BotLeg {
  readonly #o: WsBotOptions;
  readonly #call: BotCall;
  readonly #port: CallerPort;
  readonly #framesOut;
  readonly #bytesOut;
  readonly #shed;
  /** The URL without credentials or query, for logs and error events (a bot URL may carry a token). */
  readonly #name: string;
  #ws: WebSocket | undefined;
  #failures = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #ended = false;
  /** The bot sent `session_end`: its socket closing next is a hang-up, not a loss to redial. */
  #hangingUp = false;
  #alive = true;
  /** True once the provider has been told the bot is lost, until it is back. */
  #reported = false;
  /** Notices that came while the socket was not open: sent after the next session_start. */
  #heldNotices: string[] = [];

  constructor(call: BotCall, port: CallerPort, o: WsBotOptions) {
    this.#o = o;
    this.#call = call;
    this.#port = port;
    this.#framesOut = o.metrics.hot.framesOutBot;
    this.#bytesOut = o.metrics.hot.bytesOutBot;
    this.#shed = o.metrics.shedChunks.labels('bot_backpressure');
    this.#name = displayUrl(o.url);
    this.#dial();
  }

  audio(pcm: Uint8Array): void {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > this.#o.highWaterBytes) {
      this.#shed.inc();
      return;
    }
    ws.send(pcm);
    this.#framesOut.add();
    this.#bytesOut.add(pcm.byteLength);
  }

  dtmf(digit: string): void {
    this.#sendText(JSON.stringify({ event: 'dtmf', digit }));
  }

  mark(name: string): void {
    this.#sendText(JSON.stringify({ event: 'mark', name }));
  }

  /** Sent at once while the bot is connected; held (a few, newest kept) while it is being dialled. */
  notify(event: BotNotice): void {
    if (this.#ended) return;
    const text = JSON.stringify(event);
    const ws = this.#ws;
    if (ws !== undefined && ws.readyState === WebSocket.OPEN) {
      ws.send(text);
      return;
    }
    if (this.#heldNotices.length >= MAX_HELD_NOTICES) this.#heldNotices.shift();
    this.#heldNotices.push(text);
  }

  heartbeat(): void {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
    if (!this.#alive) {
      this.#o.log.warn({ bot: this.#name }, 'bot socket unresponsive; redialling');
      ws.terminate();
      return;
    }
    this.#alive = false;
    ws.ping();
  }

  end(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#heldNotices = [];
    const ws = this.#ws;
    if (ws === undefined) return;
    if (ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ event: 'session_end', reason }));
      ws.close(1000, 'session ended');
      // A bot that never answers the close handshake is cut off rather than held on to.
      setTimeout(() => ws.terminate(), 2_000).unref();
    } else ws.terminate();
  }

  #sendText(text: string): void {
    const ws = this.#ws;
    if (ws !== undefined && ws.readyState === WebSocket.OPEN) ws.send(text);
  }

  #dial(): void {
    const ws = new WebSocket(this.#o.url, {
      handshakeTimeout: this.#o.connectTimeoutMs,
      // Bots may send a whole utterance in one frame: a bound well above a provider frame's.
      maxPayload: this.#o.maxPayloadBytes,
      perMessageDeflate: false,
      generateMask: nonZeroMask,
    });
    this.#ws = ws;
    let opened = false;
    ws.on('pong', () => {
      this.#alive = true;
    });
    ws.on('open', () => {
      opened = true;
      this.#alive = true;
      this.#failures = 0;
      this.#o.metrics.botConnects.labels('ok').inc();
      this.#o.log.info({ bot: this.#name }, 'bot connected');
      if (this.#reported) this.#reported = false;
      ws.send(botSessionStart(this.#call, this.#o.botRate));
      for (const text of this.#heldNotices) ws.send(text);
      this.#heldNotices = [];
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#onMessage(ws, data, isBinary));
    ws.on('error', (err) => {
      this.#o.log.warn({ bot: this.#name, err: err.message }, 'bot socket error');
    });
    ws.on('close', (code: number) => {
      if (this.#ended || this.#hangingUp || this.#ws !== ws) return;
      this.#lost(opened ? `dropped the connection (close code ${code})` : 'could not be reached');
    });
  }

  #onMessage(ws: WebSocket, data: Buffer, isBinary: boolean): void {
    if (this.#ended || this.#ws !== ws) return;
    if (isBinary) {
      if ((data.byteLength & 1) !== 0) {
        this.#badFrame(
          ws,
          new BridgeError(
            'odd_length',
            `bot audio must be PCM16 (an even byte count), got ${data.byteLength}`,
          ),
        );
        return;
      }
      this.#port.audio(data);
      return;
    }
    try {
      const ev = parseBotEvent(data.toString('utf8'));
      switch (ev.event) {
        case 'clear':
          this.#port.clear();
          return;
        case 'mark':
          this.#port.mark(ev.name);
          return;
        case 'dtmf':
          this.#port.dtmf(ev.digit);
          return;
        case 'session_end':
          this.#hangingUp = true;
          this.#port.hangup(ev.reason ?? 'bot');
          return;
      }
    } catch (err) {
      if (!isBridgeError(err)) throw err;
      this.#badFrame(ws, err);
    }
  }

  #badFrame(ws: WebSocket, err: BridgeError): void {
    this.#o.metrics.badFrames.labels(err.code).inc();
    this.#o.log.warn({ code: err.code, msg: err.message }, 'bad frame from bot');
    if (ws.readyState === WebSocket.OPEN) ws.send(errorFrame(err));
  }

  #lost(what: string): void {
    this.#failures++;
    this.#o.metrics.botConnects.labels('failed').inc();
    const giveUp = this.#failures > this.#o.retries;
    this.#o.log.warn({ bot: this.#name, failures: this.#failures, giveUp }, `bot ${what}`);
    if (giveUp) {
      this.#port.failed(
        new BridgeError(
          'bot_unavailable',
          `bot ${this.#name} ${what}; gave up after ${this.#failures} attempts, the call continues without a bot`,
        ),
      );
      this.#ws = undefined;
      return;
    }
    if (!this.#reported) {
      this.#reported = true;
      this.#port.failed(
        new BridgeError('bot_unavailable', `bot ${this.#name} ${what}; retrying (the caller hears silence)`),
      );
    }
    const delay = Math.min(RETRY_MAX_MS, this.#o.retryBaseMs * 2 ** (this.#failures - 1));
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (!this.#ended) this.#dial();
    }, delay);
    this.#retryTimer.unref();
  }
}
