/**
 * The binary batch format between the main thread and a DSP worker, and the shared pages it is written
 * in. One batch carries every record of one event-loop turn for one worker. A hop per 20 ms frame costs
 * 5-25x the work it moves (bench/pipeline-transport.ts measures it); a hop per
 * batch does not.
 *
 * Pages: batches are written in SharedArrayBuffers that are reused, never allocated per batch (a fresh
 * ArrayBuffer per batch, even transferred, kept each thread's GC busy with external memory: a 3-8 ms
 * mark-compact in the worker every ~0.6 s at 1,000 sessions, which was the pipeline's whole p99). Each
 * direction has its own pages; a page's state lives in a shared Int32 flag, changed with Atomics:
 *
 *   FREE -> (writer) WRITING -> (writer, then posts the page id) WITH_READER -> (reader, done) FREE
 *
 * The message that hands a page over is its id, or `{ id, buf }` the first time a buffer is used (a new
 * page, or one that grew): the reader keeps its views per id.
 *
 * Layout, little-endian, everything 4-aligned so the payloads can be viewed as Int16Array in place:
 *
 *   0   f64   header value: DSP seconds spent on the batch (worker -> main), unused (main -> worker)
 *   8   i32   end: byte offset just past the last record
 *   12  i32   record count
 *   16  records, each:  i32 leg id | i32 kind | i32 byte length | i32 generation | payload, padded to 4
 *
 * A leg's records run in order, so a marker is just a record: it comes back after the audio before it.
 * An audio record carries the leg's generation (how many resets came before it) and its output carries the
 * same, so output from before a reset is recognised and dropped on arrival, whatever was in flight.
 *
 * No JSON anywhere: a leg's formats and steps travel once, as five integers in its OPEN record.
 */
import type { Codec } from '../audio/format.js';
import type { LegSpec } from './types.js';

export const HEADER_BYTES = 16;
export const RECORD_HEADER_BYTES = 16;

/** Record kinds. Main -> worker: */
export const K_OPEN = 1;
export const K_CLOSE = 2;
export const K_AUDIO = 3;
/** Both ways: payload i32 token; the worker hands it back in place. */
export const K_MARKER = 4;
/** The leg's DSP state starts afresh (its audio history is from before a reset). */
export const K_RESET = 5;
/** Fault injection for tests: payload i32 FAULT_*, i32 argument. */
export const K_FAULT = 6;
/** Worker -> main: a leg's output audio, with its input's generation. */
export const K_OUT = 7;
/** A record the worker could not process; payload is the UTF-8 message. */
export const K_ERROR = 8;
/** A leg's noise suppressor failed or could not start (once per leg and worker); payload is the UTF-8 reason. */
export const K_STEP_FAILED = 9;

export const FAULT_THROW = 1;
export const FAULT_EXIT = 2;
export const FAULT_HANG = 3;
export const FAULT_SLOW = 4;
export const FAULT_DENOISE = 5;

/** An OPEN record: from codec, from rate, to codec, to rate, steps (bit 0: denoise). */
export const OPEN_BYTES = 20;
const STEP_DENOISE = 1;

/** Page flags. */
export const PAGE_FREE = 0;
export const PAGE_WRITING = 1;
export const PAGE_WITH_READER = 2;
/** Pages per direction per worker. Two batches in flight each way need three; the rest is slack. */
export const MAX_PAGES = 8;
/** The flags of both directions: main -> worker pages at [0, MAX_PAGES), worker -> main after. */
export const CONTROL_BYTES = 2 * MAX_PAGES * 4;
export const TO_WORKER = 0;
export const TO_MAIN = MAX_PAGES;

const CODECS: readonly Codec[] = ['slin', 'pcmu', 'pcma'];

/** Small batches in a row before a grown buffer is let go: about a second of batches at full load. */
export const SHRINK_AFTER = 256;

export function align4(n: number): number {
  return (n + 3) & ~3;
}

/** A batch's end offset (past its last record), read from its header. */
export function batchEnd(i32: Int32Array): number {
  return i32[2]!;
}

/**
 * A growable buffer that records are written into, in place. Growth doubles up to `maxBytes`; past that
 * `begin` returns -1 so the caller drops and counts, rather than queueing without bound behind a worker
 * that cannot keep up. Shared writers (pages) use SharedArrayBuffers.
 */
export class BatchWriter {
  buf: ArrayBuffer | SharedArrayBuffer;
  u8: Uint8Array;
  i32: Int32Array;
  private f64: Float64Array;
  used = HEADER_BYTES;
  records = 0;
  /** The buffer is new since the reader last saw this page: send it along with the page id. */
  fresh = true;
  /** Batches in a row that fitted the initial size (see reset). */
  private smallBatches = 0;

  constructor(
    readonly initialBytes: number,
    readonly maxBytes: number,
    readonly shared = false,
  ) {
    this.buf = this.alloc(initialBytes);
    this.u8 = new Uint8Array(this.buf);
    this.i32 = new Int32Array(this.buf);
    this.f64 = new Float64Array(this.buf, 0, 1);
  }

  /**
   * Starts a record with room for `maxLen` payload bytes; returns the payload offset, or -1 when full.
   * `control` records (open, close, marker, reset, fault: a few bytes each, and bounded in number by their
   * senders) may pass the bound, so that shedding audio never loses a leg's open, close or markers.
   */
  begin(legId: number, kind: number, maxLen: number, control = false, generation = 0): number {
    const need = this.used + RECORD_HEADER_BYTES + align4(maxLen);
    if (need > this.buf.byteLength && !this.grow(need, control)) return -1;
    const h = this.used >> 2;
    this.i32[h] = legId;
    this.i32[h + 1] = kind;
    this.i32[h + 2] = maxLen;
    this.i32[h + 3] = generation;
    return this.used + RECORD_HEADER_BYTES;
  }

  /** Ends the record begun at payload offset `at`, with `len` <= the reserved bytes written. */
  end(at: number, len: number): void {
    this.i32[((at - RECORD_HEADER_BYTES) >> 2) + 2] = len;
    this.used = at + align4(len);
    this.records++;
  }

  /** One whole audio record from bytes; false when full. */
  put(legId: number, kind: number, data: Uint8Array, generation = 0): boolean {
    const at = this.begin(legId, kind, data.length, false, generation);
    if (at < 0) return false;
    this.u8.set(data, at);
    this.end(at, data.length);
    return true;
  }

  putOpen(legId: number, spec: LegSpec): boolean {
    const at = this.begin(legId, K_OPEN, OPEN_BYTES, true);
    if (at < 0) return false;
    const p = at >> 2;
    this.i32[p] = CODECS.indexOf(spec.from.codec);
    this.i32[p + 1] = spec.from.rate;
    this.i32[p + 2] = CODECS.indexOf(spec.to.codec);
    this.i32[p + 3] = spec.to.rate;
    this.i32[p + 4] = spec.steps?.includes('denoise') === true ? STEP_DENOISE : 0;
    this.end(at, OPEN_BYTES);
    return true;
  }

  /** A control record (open, close, marker, reset, fault): never refused for the bound. */
  putInt(legId: number, kind: number, value: number, value2 = 0): boolean {
    const at = this.begin(legId, kind, 8, true);
    if (at < 0) return false;
    this.i32[at >> 2] = value;
    this.i32[(at >> 2) + 1] = value2;
    this.end(at, 8);
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

  /** Writes the header (`value`, the end offset, the record count): the batch is ready to read. */
  seal(value = 0): void {
    this.f64[0] = value;
    this.i32[2] = this.used;
    this.i32[3] = this.records;
  }

  /**
   * Empties the writer. A buffer grown past 4x its initial size is let go once SHRINK_AFTER batches in
   * a row have fitted the initial size: a burst's memory is not kept, and a load that keeps batches big
   * keeps its buffer (letting it go each time would regrow it, and resend it, batch after batch).
   */
  reset(): void {
    this.smallBatches = this.used <= this.initialBytes ? this.smallBatches + 1 : 0;
    this.used = HEADER_BYTES;
    this.records = 0;
    if (this.buf.byteLength > 4 * this.initialBytes && this.smallBatches >= SHRINK_AFTER) {
      this.replace(this.alloc(this.initialBytes));
      this.smallBatches = 0;
    }
  }

  private alloc(bytes: number): ArrayBuffer | SharedArrayBuffer {
    return this.shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
  }

  private replace(next: ArrayBuffer | SharedArrayBuffer): void {
    this.buf = next;
    this.u8 = new Uint8Array(next);
    this.i32 = new Int32Array(next);
    this.f64 = new Float64Array(next, 0, 1);
    this.fresh = true;
  }

  private grow(need: number, control: boolean): boolean {
    if (need > this.maxBytes && !control) return false;
    let size = this.buf.byteLength * 2;
    while (size < need) size *= 2;
    size = Math.max(need, Math.min(size, this.maxBytes));
    const next = this.alloc(size);
    new Uint8Array(next).set(this.u8.subarray(0, this.used));
    this.replace(next);
    return true;
  }
}

/** A page: a shared writer with its id in the flags. */
export interface Page {
  readonly id: number;
  readonly writer: BatchWriter;
}

/** What hands a page to the reader: its id, plus its buffer when the reader has not seen that buffer. */
export type PageMessage = number | { readonly id: number; readonly buf: SharedArrayBuffer };

/**
 * The writer's side of one direction's pages. `acquire` takes a FREE page (allocating one up to
 * MAX_PAGES), `message` seals it and marks it WITH_READER; the reader sets it FREE again.
 */
export class PageWriter {
  private readonly pages: Page[] = [];

  constructor(
    private readonly flags: Int32Array,
    /** TO_WORKER or TO_MAIN */
    private readonly base: number,
    private readonly initialBytes: number,
    private readonly maxBytes: number,
  ) {}

  /** A page to write the next batch in; undefined when all MAX_PAGES are with the reader (a stuck peer). */
  acquire(): Page | undefined {
    for (const page of this.pages) {
      if (Atomics.compareExchange(this.flags, this.base + page.id, PAGE_FREE, PAGE_WRITING) === PAGE_FREE) {
        page.writer.reset();
        return page;
      }
    }
    const id = this.pages.length;
    if (id >= MAX_PAGES) return undefined;
    const page = { id, writer: new BatchWriter(this.initialBytes, this.maxBytes, true) };
    this.pages.push(page);
    Atomics.store(this.flags, this.base + id, PAGE_WRITING);
    return page;
  }

  /** Seals the page and hands it to the reader; the returned message is what to post. */
  message(page: Page, headerValue = 0): PageMessage {
    const w = page.writer;
    w.seal(headerValue);
    Atomics.store(this.flags, this.base + page.id, PAGE_WITH_READER);
    if (!w.fresh) return page.id;
    w.fresh = false;
    return { id: page.id, buf: w.buf as SharedArrayBuffer };
  }
}

/** The reader's side: views per page id, and `release` when a batch has been read. */
export class PageReader {
  private readonly u8s: Uint8Array[] = [];
  private readonly i32s: Int32Array[] = [];
  private readonly f64s: Float64Array[] = [];

  constructor(
    private readonly flags: Int32Array,
    private readonly base: number,
  ) {}

  /** The id of the page a message names; a buffer sent with it replaces any earlier one of that id. */
  open(message: PageMessage): number {
    if (typeof message === 'number') return message;
    this.u8s[message.id] = new Uint8Array(message.buf);
    this.i32s[message.id] = new Int32Array(message.buf);
    this.f64s[message.id] = new Float64Array(message.buf, 0, 1);
    return message.id;
  }

  /** The header value of the batch in page `id`. */
  header(id: number): number {
    return this.f64s[id]![0]!;
  }

  u8(id: number): Uint8Array {
    return this.u8s[id]!;
  }

  i32(id: number): Int32Array {
    return this.i32s[id]!;
  }

  /** The batch in page `id` has been read: the writer may reuse the page. */
  release(id: number): void {
    Atomics.store(this.flags, this.base + id, PAGE_FREE);
  }
}

/** The spec of an OPEN record's payload. */
export function readOpen(i32: Int32Array, at: number): LegSpec {
  const p = at >> 2;
  return {
    from: { codec: CODECS[i32[p]!]!, rate: i32[p + 1]! },
    to: { codec: CODECS[i32[p + 2]!]!, rate: i32[p + 3]! },
    ...((i32[p + 4]! & STEP_DENOISE) !== 0 && { steps: ['denoise'] as const }),
  };
}

/**
 * Calls `fn(legId, kind, generation, payloadOffset, length)` for each record of a batch, in order, from
 * HEADER_BYTES up to `end`.
 */
export function forEachRecord(
  i32: Int32Array,
  end: number,
  fn: (legId: number, kind: number, generation: number, at: number, len: number) => void,
): void {
  for (let off = HEADER_BYTES; off < end; ) {
    const h = off >> 2;
    const len = i32[h + 2]!;
    const at = off + RECORD_HEADER_BYTES;
    fn(i32[h]!, i32[h + 1]!, i32[h + 3]!, at, len);
    off = at + align4(len);
  }
}
