/**
 * A stereo PCM16 WAV file written as it grows: `wavefile` writes the header first (sizes zero), frames
 * are appended in blocks of `blockBytes` through a few reusable buffers, and `close` patches the RIFF
 * and data sizes. Memory is fixed: `buffers` x `blockBytes`. A write that fails, or a disk so slow that
 * every buffer is waiting on it, stops the file: `failed` says why, later frames are dropped, and the
 * header is still patched to what was written when the disk allows it. A file that reaches the 4 GiB a
 * WAV header can state stops the same way (`EFBIG`), everything before the limit written.
 */
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import wavefile from 'wavefile';

/** What the file needs of the file system: a seam for tests to inject a failing disk. */
export interface WavFs {
  open(path: string): Promise<Pick<FileHandle, 'write' | 'close'>>;
}

export const nodeWavFs: WavFs = { open: (path) => open(path, 'wx') };

export interface WavFileOptions {
  readonly path: string;
  readonly rate: number;
  readonly fs?: WavFs;
  /** Size of one write; 32 KiB is 1 s of 8 kHz stereo. */
  readonly blockBytes?: number;
  /** Blocks that may wait on the disk before the file stops as too slow. */
  readonly buffers?: number;
  /** Audio bytes a file may hold: a WAV's sizes are 32-bit, so 4 GiB less its header (~18 h at 16 kHz). */
  readonly maxDataBytes?: number;
}

/** Why a file stopped: the system's error code (ENOSPC, EIO, ENOENT, ...) or `disk_slow`. */
export type WavFailure = { readonly code: string; readonly message: string };

type Handle = Pick<FileHandle, 'write' | 'close'>;

/** The 44-byte header of an empty stereo PCM16 file at `rate`, as wavefile writes it. */
export function emptyStereoHeader(rate: number): Buffer {
  const wav = new wavefile.WaveFile();
  wav.fromScratch(2, rate, '16', [new Int16Array(0), new Int16Array(0)]);
  const header = Buffer.from(wav.toBuffer());
  if (header.length !== HEADER_BYTES || header.toString('ascii', 36, 40) !== 'data') {
    throw new Error('wavefile wrote an unexpected header layout');
  }
  return header;
}

export const HEADER_BYTES = 44;
const RIFF_SIZE_AT = 4;
const DATA_SIZE_AT = 40;

export class StereoWavFile {
  readonly #o: WavFileOptions;
  readonly #blockBytes: number;
  readonly #free: Buffer[] = [];
  /** Blocks made so far (the current one, those on their way to the disk, the free ones). */
  #made = 0;
  #current: Buffer;
  #fill = 0;
  #handle: Promise<Handle>;
  /** Writes in flight, chained so they land in order. */
  #chain: Promise<unknown>;
  #position = HEADER_BYTES;
  /** Bytes of audio handed to the disk and accepted. */
  #dataBytes = 0;
  #failure: WavFailure | undefined;
  /** The disk failed: nothing more is written (a file that is only full still gets its last block). */
  #ioFailed = false;
  readonly #maxDataBytes: number;
  #onFail: ((f: WavFailure) => void) | undefined;
  #closed = false;

  constructor(options: WavFileOptions, onFail?: (f: WavFailure) => void) {
    this.#o = options;
    this.#onFail = onFail;
    this.#blockBytes = options.blockBytes ?? 32 * 1024;
    const max = options.maxDataBytes ?? 0xffff_ffff - (HEADER_BYTES - 8);
    this.#maxDataBytes = max - (max % 4);
    // Blocks are made as the disk falls behind, up to `buffers`: a disk that keeps up costs one or two.
    this.#current = Buffer.allocUnsafe(this.#blockBytes);
    this.#made = 1;
    const fs = options.fs ?? nodeWavFs;
    this.#handle = fs.open(options.path);
    this.#chain = this.#handle.then(
      (h) => h.write(emptyStereoHeader(options.rate), 0, HEADER_BYTES, 0),
      (err: unknown) => this.#fail(err),
    );
    this.#chain = this.#chain.catch((err: unknown) => this.#fail(err));
  }

  get failed(): WavFailure | undefined {
    return this.#failure;
  }

  /** Frames on disk so far (or on their way). */
  get frames(): number {
    return Math.floor((this.#position - HEADER_BYTES + this.#fill) / 4);
  }

  /** Interleaved stereo frames; copied, so the view may be reused after the call. */
  write(interleaved: Int16Array): void {
    if (this.#failure !== undefined || this.#closed) return;
    let bytes = new Uint8Array(interleaved.buffer, interleaved.byteOffset, interleaved.byteLength);
    const room = this.#maxDataBytes - (this.#position - HEADER_BYTES + this.#fill);
    const full = bytes.length >= room;
    if (full) bytes = bytes.subarray(0, room);
    while (bytes.length > 0) {
      const n = Math.min(bytes.length, this.#blockBytes - this.#fill);
      this.#current.set(bytes.subarray(0, n), this.#fill);
      this.#fill += n;
      bytes = bytes.subarray(n);
      if (this.#fill === this.#blockBytes) {
        this.#flush();
        if (this.#failure !== undefined) return;
      }
    }
    if (full) {
      if (this.#fill > 0) this.#flush();
      this.#fail(
        Object.assign(new Error(`a WAV file holds at most ${this.#maxDataBytes} bytes of audio`), {
          code: 'EFBIG',
        }),
        false,
      );
    }
  }

  /** Writes what is buffered, patches the sizes and closes. Resolves once the disk has it (or failed). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#failure === undefined && this.#fill > 0) this.#flush();
    await this.#chain;
    let handle: Handle | undefined;
    try {
      handle = await this.#handle;
    } catch {
      return; // never opened: #fail has it
    }
    try {
      const sizes = Buffer.alloc(4);
      sizes.writeUInt32LE(HEADER_BYTES - 8 + this.#dataBytes, 0);
      await handle.write(sizes, 0, 4, RIFF_SIZE_AT);
      const data = Buffer.alloc(4);
      data.writeUInt32LE(this.#dataBytes, 0);
      await handle.write(data, 0, 4, DATA_SIZE_AT);
    } catch (err) {
      this.#fail(err);
    } finally {
      await handle.close().catch((err: unknown) => this.#fail(err));
    }
  }

  /** Bytes of audio the disk accepted (the data chunk's size once closed). */
  get dataBytes(): number {
    return this.#dataBytes;
  }

  #flush(): void {
    const block = this.#current;
    const len = this.#fill;
    let next = this.#free.pop();
    if (next === undefined && this.#made < (this.#o.buffers ?? 8)) {
      next = Buffer.allocUnsafe(this.#blockBytes);
      this.#made++;
    }
    if (next === undefined) {
      this.#fail(
        Object.assign(new Error(`the disk has not taken ${this.#o.buffers ?? 8} blocks of audio`), {
          code: 'disk_slow',
        }),
      );
      return;
    }
    this.#current = next;
    this.#fill = 0;
    const position = this.#position;
    this.#position += len;
    this.#chain = this.#chain.then(async () => {
      if (this.#ioFailed) return;
      const h = await this.#handle;
      try {
        const { bytesWritten } = await h.write(block, 0, len, position);
        if (bytesWritten !== len) throw Object.assign(new Error('short write'), { code: 'EIO' });
        this.#dataBytes += len;
      } catch (err) {
        this.#fail(err);
      } finally {
        this.#free.push(block);
      }
    });
  }

  /** Stops the file; `io`: the disk failed, so the blocks still queued are not written either. */
  #fail(err: unknown, io = true): void {
    if (io) this.#ioFailed = true;
    if (this.#failure !== undefined) return;
    const e = err as { code?: unknown; message?: unknown };
    this.#failure = {
      code: typeof e.code === 'string' ? e.code : 'EIO',
      message: typeof e.message === 'string' ? e.message : String(err),
    };
    this.#onFail?.(this.#failure);
    this.#onFail = undefined;
  }
}
