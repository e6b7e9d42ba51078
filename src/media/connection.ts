/**
 * One provider socket from upgrade to close. Before its `session_start` it is only a connection: the
 * first frame must be a valid `session_start` (else 4400), whose `session_id` must not be live (else
 * 4409, the live one untouched) and whose optional `tenant` must be the token's (else 1008). Frames that
 * arrive while the session is being set up (an async registry) are held, in order, and replayed. Once
 * refused, a connection ignores what else arrives: frames a peer sends before it sees the close are not
 * parsed, counted or answered (a flood of them costs only their framing).
 *
 * Its two timers (the wait for session_start, and the media token's expiry) run on the calls' clock
 * (BridgeContext.clock, the pacing loop's), so a test drives them by hand like the rest of a call.
 */

import type { ClockTimer } from '../clock.js';
import { botWhere, resolveBot } from '../config/bot-settings.js';
import type { BridgeContext } from '../context.js';
import { BridgeError, isBridgeError } from '../errors.js';
import type { AudioPipeline } from '../pipeline/types.js';
import type { SessionInfo } from '../state/types.js';
import type { PacingLoop } from './pacing-loop.js';
import type { CallStart, MediaAuth, ProviderDialect, ProviderWire } from './providers/types.js';
import { MediaSession } from './session.js';
import { type ProviderSocket, SOCKET_CONNECTING, SOCKET_OPEN } from './transport.js';

/** What the upgrade's authentication established (endpoint.ts). */

export interface ConnectionDeps {
  readonly ctx: BridgeContext;
  /** The provider's dialect (its path): how this connection's frames look. */
  readonly dialect: ProviderDialect;
  readonly pipeline: AudioPipeline;
  readonly loop: PacingLoop;
  readonly forget: (conn: ProviderConnection) => void;
}

/** Frames held while a session is being set up; a provider does not send more than this in that time. */
const MAX_HELD_FRAMES = 256;
/** setTimeout's longest delay (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

type State = 'awaiting_start' | 'starting' | 'live' | 'refused' | 'closed';

export class ProviderConnection {
  readonly #ws: ProviderSocket;
  readonly #auth: MediaAuth;
  readonly #deps: ConnectionDeps;
  readonly #wire: ProviderWire;
  #state: State = 'awaiting_start';
  #alive = true;
  #session: MediaSession | undefined;
  #held: { data: Buffer; isBinary: boolean }[] = [];
  /** Frames dropped because MAX_HELD_FRAMES were already held. */
  #heldDropped = 0;
  #expiry: ClockTimer | undefined;
  /** Bounds the wait for session_start: a peer that never sends it must not hold a slot. */
  #startTimer: ClockTimer | undefined;
  /** Where the tenant's own bot is, once its config is read (for the set-up failure log); undefined: BOT_URL's. */
  #botWhere: string | undefined;

  constructor(ws: ProviderSocket, auth: MediaAuth, deps: ConnectionDeps) {
    this.#ws = ws;
    this.#auth = auth;
    this.#deps = deps;
    this.#wire = deps.dialect.connect(deps.ctx);
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#onMessage(data, isBinary));
    ws.on('pong', () => {
      this.#alive = true;
    });
    ws.on('error', (err) => deps.ctx.log.debug({ err: err.message }, 'provider socket error'));
    ws.on('close', (code: number) => this.#onClose(code));
    const { clock } = deps.ctx;
    if (auth.exp !== undefined) {
      // The token's lifetime bounds the call's: an expired token ends it with 1008. (`exp` is wall-clock
      // time; what is left of it is counted on the calls' clock.)
      const ms = Math.min(MAX_TIMER_MS, Math.max(0, auth.exp * 1000 - Date.now()));
      this.#expiry = clock.setTimeout(() => this.#expired(), ms);
      this.#expiry.unref();
    }
    const startMs = deps.ctx.config.sessionStartTimeoutMs;
    this.#startTimer = clock.setTimeout(() => this.#startTimedOut(startMs), startMs);
    this.#startTimer.unref();
  }

  get session(): MediaSession | undefined {
    return this.#session;
  }

  /** Called by the shared heartbeat timer: ends a peer that did not answer the last ping. */
  heartbeat(): void {
    if (!this.#alive) {
      this.#deps.ctx.log.info(
        { session_id: this.#session?.info.session_id },
        'provider socket unresponsive; ended',
      );
      this.terminate();
      return;
    }
    this.#alive = false;
    if (this.#ws.readyState === SOCKET_OPEN) this.#ws.ping();
    this.#session?.heartbeat();
  }

  /** Shutdown: the bot is told `session_end`, the provider socket closed with 1001. */
  shutdown(): void {
    if (this.#session !== undefined) this.#session.end(1001, 'bridge shutting down', 'shutdown');
    else this.#close(1001, 'bridge shutting down');
  }

  /** Cuts the socket without a close handshake (a dead peer, or one that ignored the close). */
  terminate(): void {
    this.#ws.terminate();
    this.#onClose(1006);
  }

  #onMessage(data: Buffer, isBinary: boolean): void {
    switch (this.#state) {
      case 'live': {
        const s = this.#session!;
        s.onFrame(data, isBinary);
        return;
      }
      case 'awaiting_start':
        this.#start(data, isBinary);
        return;
      case 'starting':
        if (this.#held.length < MAX_HELD_FRAMES) this.#held.push({ data, isBinary });
        else this.#heldDropped++;
        return;
      case 'refused':
      case 'closed':
        return;
    }
  }

  #start(data: Buffer, isBinary: boolean): void {
    let ev: CallStart | undefined;
    try {
      ev = this.#wire.start(data, isBinary);
      // The dialect expects more before the call (Twilio's `connected`): the start timer still runs.
      if (ev === undefined) return;
      if (ev.tenant !== undefined && this.#auth.exp !== undefined && ev.tenant !== this.#auth.tenant) {
        throw new BridgeError(
          'tenant_mismatch',
          `session_start names tenant "${ev.tenant}" but the media token is for tenant "${this.#auth.tenant}"`,
        );
      }
    } catch (err) {
      this.#stopStartTimer();
      if (!isBridgeError(err)) throw err;
      this.#fail(err);
      return;
    }
    this.#stopStartTimer();
    this.#state = 'starting';
    // The frame that started the call also carries its first audio (AudioSocket): the session gets it.
    if (ev.replay === true) this.#held.push({ data, isBinary });
    this.#setUp(ev).catch((err: unknown) => {
      // Not the error's message: one from a library may quote the whole bot URL, credentials and all.
      this.#deps.ctx.log.error(
        {
          session_id: ev.session_id,
          code: isBridgeError(err) ? err.code : 'internal',
          err: (err as Error).name,
          bot: this.#botWhere ?? botWhere(this.#deps.ctx.config.bot),
        },
        'session set-up failed',
      );
      this.#fail(
        isBridgeError(err) ? err : new BridgeError('internal', 'internal error setting up the session'),
      );
    });
  }

  async #setUp(ev: CallStart): Promise<void> {
    const { ctx } = this.#deps;
    // With MEDIA_AUTH=none there is no token: the session_start may name the tenant.
    const tenant = this.#auth.exp === undefined && ev.tenant !== undefined ? ev.tenant : this.#auth.tenant;
    const stored = await ctx.tenants.getMediaStream(tenant);
    const format = this.#wire.format(stored);
    const bot = resolveBot(stored, ctx.config);
    this.#botWhere = 'settings' in bot ? botWhere(bot.settings) : undefined;
    const info: SessionInfo = {
      session_id: ev.session_id,
      tenant,
      customer_phone: ev.customer_phone,
      direction: ev.direction,
      started_at: ev.started_at ?? new Date().toISOString(),
      conferenceNumbers: [],
      dialect: this.#deps.dialect.name,
      ...((ctx.config.denoise || stored?.denoise === true) && { denoise: true }),
    };
    if (this.#state !== 'starting') return; // closed meanwhile
    if (ctx.draining) throw new BridgeError('not_ready', 'the bridge is shutting down; no new sessions');
    if (!(await ctx.sessions.add(info))) {
      throw new BridgeError(
        'session_live',
        `session_id "${ev.session_id}" is already live on this bridge; each call needs its own session_id`,
      );
    }
    if (this.#state !== 'starting') {
      // The socket closed while the registry answered.
      await ctx.sessions.remove(tenant, ev.session_id);
      return;
    }
    try {
      this.#session = new MediaSession(this.#ws, info, format, this.#wire, {
        ctx,
        pipeline: this.#deps.pipeline,
        loop: this.#deps.loop,
        bot,
        onEnded: (s) => this.#sessionEnded(s),
      });
    } catch (err) {
      // MediaSession undoes its own steps; the registry entry goes too, so the id can start again.
      await ctx.sessions.remove(tenant, ev.session_id);
      throw err;
    }
    if (ctx.recordings.wanted(stored?.recording)) {
      // Subscribed before any audio (the frames held during set-up come after): the file starts with the call.
      const s = this.#session;
      s.taps.subscribe(
        ctx.recordings.start(
          {
            session_id: info.session_id,
            tenant,
            started_at: new Date().toISOString(),
            rate: format.inputRate,
          },
          s.log,
        ),
      );
    }
    ctx.metrics.sessions.set(ctx.sessions.count());
    ctx.metrics.sessionsTotal.inc();
    this.#state = 'live';
    const held = this.#held;
    this.#held = [];
    for (const f of held) this.#onMessage(f.data, f.isBinary);
    if (this.#heldDropped > 0) this.#reportHeldDropped();
  }

  /** Frames past the bound while the session was set up: counted, and the provider told once. */
  #reportHeldDropped(): void {
    const n = this.#heldDropped;
    this.#heldDropped = 0;
    const err = new BridgeError(
      'frames_dropped',
      `${n} frames sent while the session was being set up were dropped: at most ${MAX_HELD_FRAMES} are held until it is ready`,
    );
    this.#deps.ctx.metrics.badFrames.labels(err.code).inc(n);
    this.#session?.log.warn({ code: err.code, dropped: n }, 'frames dropped during set-up');
    this.#report(err);
  }

  #sessionEnded(s: MediaSession): void {
    const { ctx } = this.#deps;
    ctx.sessions.remove(s.info.tenant, s.info.session_id).then(
      () => ctx.metrics.sessions.set(ctx.sessions.count()),
      (err: unknown) => ctx.log.error({ err }, 'session registry remove failed'),
    );
  }

  #stopStartTimer(): void {
    if (this.#startTimer !== undefined) this.#deps.ctx.clock.clearTimeout(this.#startTimer);
    this.#startTimer = undefined;
  }

  #startTimedOut(ms: number): void {
    if (this.#state !== 'awaiting_start') return;
    this.#fail(
      new BridgeError(
        'bad_session_start',
        `no session_start within ${ms} ms of connecting; send session_start as the first frame`,
      ),
    );
  }

  #expired(): void {
    const err = new BridgeError(
      'token_expired',
      'the media token expired during the call; reconnect with a fresh token',
    );
    this.#report(err);
    if (this.#session !== undefined) this.#session.end(err.close!, 'media token expired', 'token_expired');
    else this.#close(err.close!, 'media token expired');
  }

  /** Reports `err` to the provider and closes with its close code. */
  /** Tells the provider of `err`, in its dialect's error event where it has one. */
  #report(err: BridgeError): void {
    const text = this.#wire.errorFrame(err);
    if (text !== undefined && this.#ws.readyState === SOCKET_OPEN) this.#ws.send(text);
  }

  #fail(err: BridgeError): void {
    if (this.#state === 'refused') return;
    if (this.#state !== 'closed') this.#state = 'refused';
    this.#deps.ctx.metrics.badFrames.labels(err.code).inc();
    this.#report(err);
    this.#close(err.close ?? 1011, closeReason(err.message));
  }

  #close(code: number, reason: string): void {
    if (this.#ws.readyState === SOCKET_OPEN || this.#ws.readyState === SOCKET_CONNECTING) {
      this.#ws.close(code, reason);
    }
  }

  #onClose(code: number): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#held = [];
    if (this.#expiry !== undefined) this.#deps.ctx.clock.clearTimeout(this.#expiry);
    this.#expiry = undefined;
    this.#stopStartTimer();
    this.#session?.end(
      code === 1000 ? 1000 : 1001,
      'closed',
      code === 1000 ? 'provider_closed' : 'provider_lost',
    );
    this.#deps.forget(this);
  }
}

/** A close reason is at most 123 bytes. */
function closeReason(text: string): string {
  let s = text.length > 120 ? text.slice(0, 120) : text;
  while (Buffer.byteLength(s) > 123) s = s.slice(0, -1);
  return s;
}
