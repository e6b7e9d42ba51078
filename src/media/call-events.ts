/**
 * Live events of the calls this instance holds, per tenant, for `GET /v1/events` (src/control/events.ts):
 * session_started / _updated / _ended, level, mark, clear, error, bot_latency_ms, and the messaging
 * events of a call (message_status, message_button). Every event's data has `session_id` at its top.
 *
 * Meters cost nothing while nobody listens: a call gets a meter (src/media/call-meter.ts, on its raw
 * audio taps) only while its tenant has a listener, and one timer reads every metered call's levels
 * `LEVEL_INTERVAL_MS` apart. A listener must not block or throw (one that throws is dropped); the SSE
 * route's listener writes into its stream, or drops the event when the client is not reading.
 *
 * Only this instance's calls: with a shared state store, each instance reports the calls it holds.
 */
import { performance } from 'node:perf_hooks';
import { ROOT_DIALECT } from '../dialects/index.js';
import type { Logger } from '../log.js';
import type { SessionInfo } from '../state/types.js';
import { CallMeter } from './call-meter.js';
import type { SessionFormat } from './format.js';
import type { RawTap } from './tap-types.js';

/** Five readings a second (the contract asks for 4 to 10). */
export const LEVEL_INTERVAL_MS = 200;

export type CallEventListener = (event: string, data: CallEventData) => void;

export interface CallEventData {
  readonly session_id: string;
  readonly [field: string]: unknown;
}

/** What the events need of a live call (a MediaSession). */
export interface LiveCall {
  readonly info: SessionInfo;
  readonly format: SessionFormat;
  /** The call's audio taps: a meter observes the bytes as they pass. */
  readonly taps: { observe(tap: RawTap): () => void };
  /** The call's bot as events show it: dialect and a URL without credentials. */
  readonly botView: { readonly dialect: string; readonly url?: string };
  /** Whether the caller's audio reaches the bot through the noise suppressor. */
  readonly denoised: boolean;
}

interface Entry {
  readonly call: LiveCall;
  conferenceNumbers: readonly string[];
  meter: CallMeter | undefined;
  unobserve: (() => void) | undefined;
}

export class CallEvents {
  readonly #log: Logger;
  readonly #listeners = new Map<string, Set<CallEventListener>>();
  /** Live calls by tenant, then id. */
  readonly #calls = new Map<string, Map<string, Entry>>();
  #timer: NodeJS.Timeout | undefined;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Whether `tenant` has a listener (an event for nobody need not be built). */
  listening(tenant: string): boolean {
    return this.#listeners.has(tenant);
  }

  /**
   * Events of `tenant`'s calls from now on, until the returned function is called. A new listener first
   * gets a `session_started` for each call already live.
   */
  subscribe(tenant: string, listener: CallEventListener): () => void {
    let set = this.#listeners.get(tenant);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(tenant, set);
      for (const e of this.#calls.get(tenant)?.values() ?? []) this.#meter(e);
    }
    set.add(listener);
    for (const e of this.#calls.get(tenant)?.values() ?? []) {
      this.#deliver(listener, 'session_started', this.#view(e));
    }
    this.#schedule();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      set.delete(listener);
      if (set.size > 0 || this.#listeners.get(tenant) !== set) return;
      this.#listeners.delete(tenant);
      for (const e of this.#calls.get(tenant)?.values() ?? []) this.#unmeter(e);
      this.#schedule();
    };
  }

  /** An event of a call of `tenant`, to its listeners. */
  emit(tenant: string, event: string, data: CallEventData): void {
    const set = this.#listeners.get(tenant);
    if (set === undefined) return;
    for (const l of set) this.#deliver(l, event, data, set);
  }

  started(call: LiveCall): void {
    const { tenant, session_id: id } = call.info;
    let calls = this.#calls.get(tenant);
    if (calls === undefined) {
      calls = new Map();
      this.#calls.set(tenant, calls);
    }
    const e: Entry = {
      call,
      conferenceNumbers: call.info.conferenceNumbers,
      meter: undefined,
      unobserve: undefined,
    };
    calls.set(id, e);
    if (this.listening(tenant)) {
      this.#meter(e);
      this.emit(tenant, 'session_started', this.#view(e));
    }
  }

  /** The call's conference members changed (the conference route). */
  updated(tenant: string, sessionId: string, conferenceNumbers: readonly string[]): void {
    const e = this.#calls.get(tenant)?.get(sessionId);
    if (e === undefined) return;
    e.conferenceNumbers = conferenceNumbers;
    this.emit(tenant, 'session_updated', this.#view(e));
  }

  ended(call: LiveCall, reason: string): void {
    const { tenant, session_id: id } = call.info;
    const calls = this.#calls.get(tenant);
    const e = calls?.get(id);
    if (e === undefined || e.call !== call) return;
    if (e.meter !== undefined) this.#emitLevel(e);
    this.#unmeter(e);
    calls!.delete(id);
    if (calls!.size === 0) this.#calls.delete(tenant);
    this.emit(tenant, 'session_ended', { ...this.#view(e), reason });
  }

  /** Stops the level timer and drops every listener (the bridge is closing). */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    for (const calls of this.#calls.values()) for (const e of calls.values()) this.#unmeter(e);
    this.#listeners.clear();
  }

  #view(e: Entry): CallEventData {
    const { info, format, botView } = e.call;
    return {
      session_id: info.session_id,
      customer_phone: info.customer_phone,
      direction: info.direction,
      started_at: info.started_at,
      conferenceNumbers: e.conferenceNumbers,
      dialect: info.dialect ?? ROOT_DIALECT,
      bot: botView,
      formats: {
        codec: format.codec,
        input_sample_rate: format.inputRate,
        output_sample_rate: format.outputRate,
        encoding: format.encoding,
        chunk_bytes: format.chunkBytes,
      },
      denoise: e.call.denoised,
    };
  }

  #meter(e: Entry): void {
    if (e.meter !== undefined) return;
    const { tenant, session_id: id } = e.call.info;
    const meter = new CallMeter(
      e.call.format.codec,
      () => performance.now(),
      (ms) => this.emit(tenant, 'bot_latency_ms', { session_id: id, bot_latency_ms: ms }),
    );
    e.meter = meter;
    e.unobserve = e.call.taps.observe(meter);
  }

  #unmeter(e: Entry): void {
    e.unobserve?.();
    e.unobserve = undefined;
    e.meter = undefined;
  }

  #emitLevel(e: Entry): void {
    const levels = e.meter!.read();
    this.emit(e.call.info.tenant, 'level', { session_id: e.call.info.session_id, ...levels });
  }

  /** The level timer runs while anyone listens. */
  #schedule(): void {
    if (this.#listeners.size > 0 && this.#timer === undefined) {
      this.#timer = setInterval(() => this.#tick(), LEVEL_INTERVAL_MS);
      this.#timer.unref();
    } else if (this.#listeners.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #tick(): void {
    for (const tenant of this.#listeners.keys()) {
      for (const e of this.#calls.get(tenant)?.values() ?? []) if (e.meter !== undefined) this.#emitLevel(e);
    }
  }

  #deliver(l: CallEventListener, event: string, data: CallEventData, set?: Set<CallEventListener>): void {
    try {
      l(event, data);
    } catch (err) {
      this.#log.warn({ err: (err as Error)?.message, event }, 'event listener failed; dropped');
      set?.delete(l);
    }
  }
}
