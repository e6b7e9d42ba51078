/**
 * The binary batch format between the main thread and a DSP worker. One ArrayBuffer carries every record
 * of one event-loop turn for one worker and is transferred, not copied: a hop per 20 ms frame costs 5-25x
 * the work it moves (shared/MEASUREMENTS.md, and bench/pipeline-transport.ts here), a hop per batch does not.
 *
 * Layout, little-endian, everything 4-aligned so the payloads can be viewed as Int16Array in place:
 *
 *   0   f64   header value: DSP seconds spent on the batch (worker -> main), unused (main -> worker)
 *   8   records, each:  i32 session id | i32 kind | i32 byte length | payload, padded to 4 bytes
 *
 * No JSON anywhere: a session's format travels once, as five integers in its OPEN record.
 */
import type { Codec } from '../audio/format.js';
import type { PipelineSessionSpec } from './types.js';

export const HEADER_BYTES = 8;
export const RECORD_HEADER_BYTES = 12;

/** Record kinds. Main -> worker: */
export const K_OPEN = 1;
export const K_CLOSE = 2;
export const K_CALLER = 3;
export const K_BOT = 4;
/** Fault injection for tests: payload i32 FAULT_*. */
export const K_FAULT = 5;
/** Worker -> main: */
export const K_TO_BOT = 6;
export const K_TO_CALLER = 7;
/** A record the worker could not process; payload is the UTF-8 message. */
export const K_ERROR = 8;

export const FAULT_THROW = 1;
export const FAULT_EXIT = 2;
export const FAULT_HANG = 3;

export const OPEN_BYTES = 20;

const CODECS: readonly Codec[] = ['slin', 'pcmu', 'pcma'];

export function align4(n: number): number {
  return (n + 3) & ~3;
}

/**
 * A growable staging buffer that records are written into, then taken as one transferable ArrayBuffer.
 * Growth doubles up to `maxBytes`; past that `begin` returns -1 so the caller drops and counts, rather
 * than queueing without bound behind a worker that cannot keep up.
 */
export class BatchWriter {
  private buf: ArrayBuffer;
  u8: Uint8Array;
  i32: Int32Array;
  private f64: Float64Array;
  used = HEADER_BYTES;
  records = 0;

  constructor(
    initialBytes: number,
    readonly maxBytes: number,
  ) {
    this.buf = new ArrayBuffer(initialBytes);
    this.u8 = new Uint8Array(this.buf);
    this.i32 = new Int32Array(this.buf);
    this.f64 = new Float64Array(this.buf, 0, 1);
  }

  /**
   * Starts a record with room for `maxLen` payload bytes; returns the payload offset, or -1 when full.
   * `control` records (open, close, fault: a few bytes each, one per session at most) may pass the bound,
   * so that shedding audio never loses a session's open or close.
   */
  begin(sessionId: number, kind: number, maxLen: number, control = false): number {
    const need = this.used + RECORD_HEADER_BYTES + align4(maxLen);
    if (need > this.buf.byteLength && !this.grow(need, control)) return -1;
    const h = this.used >> 2;
    this.i32[h] = sessionId;
    this.i32[h + 1] = kind;
    this.i32[h + 2] = maxLen;
    return this.used + RECORD_HEADER_BYTES;
  }

  /** Ends the record begun at payload offset `at`, with `len` <= the reserved bytes written. */
  end(at: number, len: number): void {
    this.i32[((at - RECORD_HEADER_BYTES) >> 2) + 2] = len;
    this.used = at + align4(len);
    this.records++;
  }

  /** One whole record from bytes; false when full. */
  put(sessionId: number, kind: number, data: Uint8Array): boolean {
    const at = this.begin(sessionId, kind, data.byteLength);
    if (at < 0) return false;
    this.u8.set(data, at);
    this.end(at, data.byteLength);
    return true;
  }

  putOpen(sessionId: number, spec: PipelineSessionSpec): boolean {
    const at = this.begin(sessionId, K_OPEN, OPEN_BYTES, true);
    if (at < 0) return false;
    const p = at >> 2;
    this.i32[p] = CODECS.indexOf(spec.callerIn.codec);
    this.i32[p + 1] = spec.callerIn.sampleRate;
    this.i32[p + 2] = CODECS.indexOf(spec.callerOut.codec);
    this.i32[p + 3] = spec.callerOut.sampleRate;
    this.i32[p + 4] = spec.botRate;
    this.end(at, OPEN_BYTES);
    return true;
  }

  putInt(sessionId: number, kind: number, value: number): boolean {
    const at = this.begin(sessionId, kind, 4, true);
    if (at < 0) return false;
    this.i32[at >> 2] = value;
    this.end(at, 4);
    return true;
  }

  /** Appends the records (not the header) of another writer, in order; they were within bounds once. */
  append(other: BatchWriter): boolean {
    const len = other.used - HEADER_BYTES;
    if (len === 0) return true;
    if (this.used + len > this.buf.byteLength && !this.grow(this.used + len, true)) return false;
    this.u8.set(other.u8.subarray(HEADER_BYTES, other.used), this.used);
    this.used += len;
    this.records += other.records;
    return true;
  }

  /** The batch as its own ArrayBuffer (to transfer), with `header` in its first 8 bytes; resets. */
  take(header = 0): ArrayBuffer {
    this.f64[0] = header;
    const out = this.buf.slice(0, this.used);
    this.used = HEADER_BYTES;
    this.records = 0;
    return out;
  }

  private grow(need: number, control: boolean): boolean {
    if (need > this.maxBytes && !control) return false;
    let size = this.buf.byteLength * 2;
    while (size < need) size *= 2;
    size = Math.max(need, Math.min(size, this.maxBytes));
    const next = new ArrayBuffer(size);
    const u8 = new Uint8Array(next);
    u8.set(this.u8.subarray(0, this.used));
    this.buf = next;
    this.u8 = u8;
    this.i32 = new Int32Array(next);
    this.f64 = new Float64Array(next, 0, 1);
    return true;
  }
}

/** The spec of an OPEN record's payload. */
export function readOpen(i32: Int32Array, at: number): PipelineSessionSpec {
  const p = at >> 2;
  return {
    callerIn: { codec: CODECS[i32[p]!]!, sampleRate: i32[p + 1]! },
    callerOut: { codec: CODECS[i32[p + 2]!]!, sampleRate: i32[p + 3]! },
    botRate: i32[p + 4]!,
  };
}
