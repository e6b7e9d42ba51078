/**
 * What every bot behind a WebSocket shares, whatever its dialect: dialled on session_start, redialled
 * with bounded exponential backoff when it cannot be reached or drops (the call stays up meanwhile: caller
 * audio is held for the first dial (about 2 s) and dropped during a redial, the caller hears silence, and
 * the provider gets one `error` event when the bot is lost
 * and one when the bridge gives up on it), pinged by the shared heartbeat, told the end of the call.
 * A dialect (bridge.ts, twilio.ts, openai-realtime.ts) says what goes over the socket.
 *
 * Where each dial goes: `url` and `headers` as given, or what the dialect's `resolve()` answers, awaited
 * before each dial (an HTTP call to the vendor's API: pre-dial.ts), within BOT_CONNECT_TIMEOUT_MS. A
 * failed one counts as a refused connection; the URL it gives must be ws:// or wss:// and pass `dialled`
 * (a tenant's bot: BOT_URL_ALLOWED_HOSTS), or the link gives up on the bot at once.
 *
 * Its timers (the wait before a redial, the bound on a bot's close handshake, the bound on `resolve()`)
 * run on the calls' clock (`clock`: BridgeContext.clock), so a test drives them by hand.
 */
import { randomFillSync } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import WebSocket from 'ws';
import { type Clock, type ClockTimer, systemClock } from '../../clock.js';
import { type BotUrlProblem, isWsBotUrl } from '../../config/bot-url.js';
import { BridgeError, isBridgeError } from '../../errors.js';
import { displayUrl, type Logger, shownValue } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import { type DialTarget, PreDialError } from './pre-dial.js';
import type { BotCall, BotLeg, BotNotice, CallerPort } from './types.js';

export interface WsLinkOptions {
  readonly url: string;
  readonly retries: number;
  readonly retryBaseMs: number;
  readonly connectTimeoutMs: number;
  readonly maxPayloadBytes: number;
  readonly highWaterBytes: number;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** Headers of the upgrade request (a bearer key, say); never logged. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The clock of the redial waits and the close bound; the system's by default. */
  readonly clock?: Clock;
  /**
   * How a host name becomes an address (node's `lookup`): DNS by default. Tests give one that points a
   * vendor's host name at 127.0.0.1, so a dialect's rule for that host is tried against a local server.
   */
  readonly lookup?: LookupFunction;
  /**
   * The rule a URL that `resolve()` gives is held to besides being ws:// or wss:// (a tenant's bot:
   * BOT_URL_ALLOWED_HOSTS); undefined: none (the environment's bot).
   */
  readonly dialled?: (url: string) => BotUrlProblem | undefined;
}

/** How long a bot may take to answer the close handshake before its socket is cut. */
const CLOSE_WAIT_MS = 2_000;

/** Longest wait between redials. */
const RETRY_MAX_MS = 5_000;
/** Notices held while the bot is being dialled or redialled; older ones go first past this. */
const MAX_HELD_NOTICES = 32;
/**
 * The caller's audio held while the bot is first dialled, in frames as the dialect sends them (newest
 * kept): about 2 s of 20 ms frames, so a caller's first words reach a bot that took that long to answer.
 * After the bot has once connected, audio during a redial is dropped (the caller hears silence then).
 */
const MAX_HELD_AUDIO_FRAMES = 100;

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

export abstract class WsLink implements BotLeg {
  protected readonly o: WsLinkOptions;
  protected readonly call: BotCall;
  protected readonly port: CallerPort;
  protected readonly log: Logger;
  readonly #framesOut;
  readonly #bytesOut;
  readonly #shed;
  /** The URL without credentials or query, for logs and error events (a bot URL may carry a token). */
  protected readonly name: string;
  #ws: WebSocket | undefined;
  #failures = 0;
  readonly #clock: Clock;
  #retryTimer: ClockTimer | undefined;
  #ended = false;
  /** The bot hung up: its socket closing next is a hang-up, not a loss to redial. */
  protected hangingUp = false;
  #alive = true;
  /** True once the provider has been told the bot is lost, until it is back. */
  #reported = false;
  /** Notices that came while the socket was not open: sent after the next handshake. */
  #heldNotices: string[] = [];
  /** Audio frames held until the first connect (copies: the leg's views are reused). */
  #heldAudio: Uint8Array[] = [];
  #everOpened = false;
  /** Aborts the `resolve()` under way, if one is. */
  #resolving: AbortController | undefined;

  constructor(call: BotCall, port: CallerPort, o: WsLinkOptions) {
    this.o = o;
    this.call = call;
    this.port = port;
    this.log = o.log;
    this.#framesOut = o.metrics.hot.framesOutBot;
    this.#bytesOut = o.metrics.hot.bytesOutBot;
    this.#shed = o.metrics.shedChunks.labels('bot_backpressure');
    this.name = displayUrl(o.url);
    this.#clock = o.clock ?? systemClock;
  }

  /** Dials; a subclass calls it at the end of its constructor, once its own fields are set. */
  protected start(): void {
    this.#dial();
  }

  /** Caller audio in the dialect's format (a view valid during the call only). */
  abstract audio(pcm: Uint8Array): void;
  abstract dtmf(digit: string): void;
  /** A mark the bot (or this dialect) placed is reported: played, or (`cleared`) dropped by a clear. */
  abstract mark(name: string, cleared: boolean): void;
  /** The socket is open: the dialect's handshake. */
  protected abstract opened(): void;
  /** A frame from the bot. A BridgeError thrown here skips the frame (logged, counted; the call goes on). */
  protected abstract received(data: Buffer, isBinary: boolean): void;
  /** The last words to the bot before the socket closes (e.g. `session_end`, `stop`). */
  protected abstract farewell(reason: string): void;
  /**
   * Where this dial goes, when the dialect learns it from an HTTP call first (pre-dial.ts): awaited
   * before each dial, `signal` aborted past BOT_CONNECT_TIMEOUT_MS or when the call ends. A rejection (a
   * PreDialError names the route and status) counts as a refused connection. Undefined (the default):
   * `url` and `headers` of the options, dialled at once.
   */
  protected resolve(_signal: AbortSignal): Promise<DialTarget> | undefined {
    return undefined;
  }
  /** A notice from outside the call (a message's status, a tapped button), as text; undefined drops it. */
  protected notice(event: BotNotice): string | undefined {
    return JSON.stringify(event);
  }
  /** A frame the bot sent was skipped: tell it, if the dialect has a way (ours has `error` events). */
  protected rejected(_err: BridgeError): void {}
  /**
   * The socket closed with `code` (and the bot's `reason` text) while the call was up: true when that is
   * the bot hanging up.
   */
  protected closedAsHangup(_code: number, _reason: string): boolean {
    return false;
  }

  /**
   * A dialect whose connection is of use only once the bot has answered its handshake (an ElevenLabs
   * agent naming its formats) sets this and calls `confirmOpen()` then: a drop before it counts as one
   * more failed attempt toward BOT_RETRIES, so a bot that closes every conversation at once is given up,
   * not redialled for ever.
   */
  protected readonly confirmsOpen: boolean = false;

  /** The connection is of use: the failures so far are forgotten, and the provider may be told again. */
  protected confirmOpen(): void {
    this.#failures = 0;
    this.#reported = false;
  }

  /**
   * The open socket is of no use (the bot never answered the dialect's handshake): it is cut, and
   * redialled as a dropped one. Nothing when it is not open.
   */
  protected drop(): void {
    const ws = this.#ws;
    if (ws !== undefined && ws.readyState === WebSocket.OPEN) ws.terminate();
  }

  /**
   * A planned move to a new connection (a vendor's notice that this one ends soon): the open socket is
   * closed (1000) and a new one dialled at once. Not a failure: nothing is counted, the provider is not
   * told, and a later loss is redialled as any other. The dialect holds what the caller says meanwhile.
   */
  protected moveConnection(): void {
    const ws = this.#ws;
    if (this.#ended || ws === undefined || this.#retryTimer !== undefined || this.#resolving !== undefined)
      return;
    // No longer the link's socket: its close and any frame still coming are not heard.
    this.#ws = undefined;
    if (ws.readyState === WebSocket.OPEN) {
      ws.close(1000, 'moving to a new connection');
      this.#clock.setTimeout(() => ws.terminate(), CLOSE_WAIT_MS).unref();
    } else ws.terminate();
    this.#dial();
  }

  get connected(): boolean {
    return this.#ws !== undefined && this.#ws.readyState === WebSocket.OPEN;
  }

  /**
   * The caller's audio (in the leg's format) that came before the bot first answered: a dialect's `audio`
   * hands it here while not connected, and it is handed to `audio` again, in order, right after the
   * dialect's handshake. Only before the first connect, and at most MAX_HELD_AUDIO_FRAMES (newest kept).
   */
  protected hold(data: Uint8Array): void {
    if (this.#everOpened || this.#ended) return;
    if (this.#heldAudio.length >= MAX_HELD_AUDIO_FRAMES) {
      this.#heldAudio.shift();
      this.#shed.inc();
    }
    // A copy of its own: the chunk may be a view of a buffer its giver refills (a Buffer's slice() would
    // be another view of it, not a copy).
    this.#heldAudio.push(new Uint8Array(data));
  }

  /** Audio to the bot: shed (and counted) while its socket is not reading, never queued without bound. */
  protected sendAudio(data: Uint8Array | string): void {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > this.o.highWaterBytes) {
      this.#shed.inc();
      return;
    }
    ws.send(data);
    this.#framesOut.add();
    this.#bytesOut.add(data.length);
  }

  protected sendText(text: string): void {
    const ws = this.#ws;
    if (ws !== undefined && ws.readyState === WebSocket.OPEN) ws.send(text);
  }

  /** Sent at once while the bot is connected; held (a few, newest kept) while it is being dialled. */
  notify(event: BotNotice): void {
    if (this.#ended) return;
    const text = this.notice(event);
    if (text === undefined) return;
    if (this.connected) {
      this.sendText(text);
      return;
    }
    if (this.#heldNotices.length >= MAX_HELD_NOTICES) this.#heldNotices.shift();
    this.#heldNotices.push(text);
  }

  heartbeat(): void {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) return;
    if (!this.#alive) {
      this.log.warn({ bot: this.name }, 'bot socket unresponsive; redialling');
      ws.terminate();
      return;
    }
    this.#alive = false;
    ws.ping();
  }

  end(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#retryTimer !== undefined) this.#clock.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#resolving?.abort();
    this.#resolving = undefined;
    this.#heldNotices = [];
    this.#heldAudio = [];
    this.ended();
    const ws = this.#ws;
    if (ws === undefined) return;
    if (ws.readyState === WebSocket.OPEN) {
      this.farewell(reason);
      ws.close(1000, 'session ended');
      // A bot that never answers the close handshake is cut off rather than held on to.
      this.#clock.setTimeout(() => ws.terminate(), CLOSE_WAIT_MS).unref();
    } else ws.terminate();
  }

  /** The call is over: a dialect lets go of what it holds (timers, buffers). */
  protected ended(): void {}

  #dial(): void {
    const abort = new AbortController();
    let pending: Promise<DialTarget> | undefined;
    try {
      pending = this.resolve(abort.signal);
    } catch (err) {
      pending = Promise.reject(err);
    }
    if (pending === undefined) {
      this.#open({ url: this.o.url, ...(this.o.headers !== undefined && { headers: this.o.headers }) });
      return;
    }
    this.#resolving = abort;
    const bound = this.#clock.setTimeout(() => abort.abort(), this.o.connectTimeoutMs);
    bound.unref();
    pending.then(
      (target) => {
        this.#clock.clearTimeout(bound);
        if (this.#ended || this.#resolving !== abort) return;
        this.#resolving = undefined;
        const problem = isWsBotUrl(target.url)
          ? this.o.dialled?.(target.url)
          : { accepts: 'a ws:// or wss:// URL', shown: shownValue(target.url) };
        if (problem !== undefined) {
          this.log.warn(
            { bot: this.name, url: problem.shown, accepts: problem.accepts },
            'bot named a URL this bridge may not dial',
          );
          this.#lost(`named a URL this bridge may not dial (it must be ${problem.accepts})`, true);
          return;
        }
        try {
          this.#open(target);
        } catch (err) {
          // ws quotes the URL in its message: the error's name only.
          this.#lost(`named a URL the WebSocket client refuses (${(err as Error).name})`, true);
        }
      },
      (err: unknown) => {
        this.#clock.clearTimeout(bound);
        if (this.#ended || this.#resolving !== abort) return;
        this.#resolving = undefined;
        const failure =
          err instanceof PreDialError
            ? err
            : new PreDialError(`failed before dialling (${(err as Error).name})`);
        // As for a refused upgrade: the status is what the operator needs; #lost's line says the rest.
        if (failure.status !== undefined)
          this.log.warn({ bot: this.name, status: failure.status }, 'bot refused the connection');
        this.#lost(`could not be reached (${failure.message})`, failure.final);
      },
    );
  }

  #open(target: DialTarget): void {
    const ws = new WebSocket(target.url, {
      handshakeTimeout: this.o.connectTimeoutMs,
      // Bots may send a whole utterance in one frame: a bound well above a provider frame's.
      maxPayload: this.o.maxPayloadBytes,
      perMessageDeflate: false,
      generateMask: nonZeroMask,
      ...(target.headers !== undefined && { headers: { ...target.headers } }),
      ...(this.o.lookup !== undefined && { lookup: this.o.lookup }),
    });
    this.#ws = ws;
    let opened = false;
    ws.on('pong', () => {
      this.#alive = true;
    });
    ws.on('open', () => {
      opened = true;
      this.#alive = true;
      this.o.metrics.botConnects.labels('ok').inc();
      this.log.info({ bot: this.name }, 'bot connected');
      if (!this.confirmsOpen) this.confirmOpen();
      this.#everOpened = true;
      this.opened();
      // The caller's audio from before the bot answered, in order, then any notices held meanwhile.
      const held = this.#heldAudio;
      this.#heldAudio = [];
      for (const frame of held) this.audio(frame);
      for (const text of this.#heldNotices) ws.send(text);
      this.#heldNotices = [];
    });
    ws.on('unexpected-response', (_req, res) => {
      // 401, 429 and the like: the status is what the operator needs; the answer's body is not read.
      this.log.warn({ bot: this.name, status: res.statusCode }, 'bot refused the connection');
      res.resume();
      ws.terminate();
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#onMessage(ws, data, isBinary));
    ws.on('error', (err) => {
      this.log.warn({ bot: this.name, err: err.message }, 'bot socket error');
    });
    ws.on('close', (code: number, reason: Buffer) => {
      if (this.#ended || this.#ws !== ws) return;
      if (this.hangingUp || (opened && this.closedAsHangup(code, reason.toString('utf8')))) {
        if (!this.hangingUp) this.port.hangup('bot');
        this.hangingUp = true;
        return;
      }
      this.#lost(opened ? `dropped the connection (close code ${code})` : 'could not be reached');
    });
  }

  #onMessage(ws: WebSocket, data: Buffer, isBinary: boolean): void {
    if (this.#ended || this.#ws !== ws) return;
    try {
      this.received(data, isBinary);
    } catch (err) {
      if (!isBridgeError(err)) throw err;
      this.o.metrics.badFrames.labels(err.code).inc();
      this.log.warn({ code: err.code, msg: err.message }, 'bad frame from bot; skipped');
      this.rejected(err);
    }
  }

  /** The bot could not be reached or dropped: redialled later, or (past BOT_RETRIES, or `final`) given up. */
  #lost(what: string, final = false): void {
    this.#failures++;
    this.o.metrics.botConnects.labels('failed').inc();
    const giveUp = final || this.#failures > this.o.retries;
    this.log.warn({ bot: this.name, failures: this.#failures, giveUp }, `bot ${what}`);
    if (giveUp) {
      this.port.failed(
        new BridgeError(
          'bot_unavailable',
          `bot ${this.name} ${what}; gave up after ${this.#failures} attempts, the call continues without a bot`,
        ),
      );
      this.#ws = undefined;
      this.#heldAudio = [];
      return;
    }
    if (!this.#reported) {
      this.#reported = true;
      this.port.failed(
        new BridgeError('bot_unavailable', `bot ${this.name} ${what}; retrying (the caller hears silence)`),
      );
    }
    const delay = Math.min(RETRY_MAX_MS, this.o.retryBaseMs * 2 ** (this.#failures - 1));
    this.#retryTimer = this.#clock.setTimeout(() => {
      this.#retryTimer = undefined;
      if (!this.#ended) this.#dial();
    }, delay);
    this.#retryTimer.unref();
  }
}
