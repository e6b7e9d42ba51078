/**
 * G.711 and PCM16 codecs for the hot path. Pure and synchronous: decode into caller-provided Int16Array,
 * encode into caller-provided Uint8Array, nothing allocated per chunk.
 *
 * Table lookups, not alawmulaw's per-sample functions. The tables are built once, at load, *from*
 * alawmulaw's `decodeSample`/`encodeSample`, so the output is bit-identical to alawmulaw (a test checks
 * every one of the 65,536 inputs); only the speed differs. Measured with `npx tsx bench/codec.ts`
 * (Node 20, 2-core VM shared with other work, 160-sample chunks, median of 7 rounds, ns per sample;
 * the machine is noisy, so read the ratios, not the digits):
 *
 *                 alawmulaw.decode/encode   its per-sample functions   table here
 *   µ-law decode        9.1-11.7 (allocates)        16.3                 2.6-2.9 (256 entries)
 *   µ-law encode       12.1-12.9 (allocates)        15.6-16.2            3.4-3.7 (64K entries)
 *   A-law decode       11.7-15.7 (allocates)        15.3-17.4            3.1-3.2 (256 entries)
 *   A-law encode        9.3-12.7 (allocates)        17.4-18.2            3.2-3.3 (64K entries)
 *
 * The tables win 3-5x against alawmulaw's array API and 5x against its per-sample functions (the only
 * way to use it without allocating), so the tables stay. A 16K encode table (index sample >> 2) would
 * not be exact: both laws round on the low bits of negative samples. Building the two 64 KB encode
 * tables costs a few ms once per thread.
 */
import alawmulaw from 'alawmulaw';
import { BridgeError } from '../errors.js';
import type { Codec } from './format.js';

const { alaw, mulaw } = alawmulaw;

/** Int16Array views over bytes read PCM16 LE only on a little-endian host (every platform Node ships on). */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function buildDecode(decodeSample: (v: number) => number): Int16Array {
  const table = new Int16Array(256);
  for (let i = 0; i < 256; i++) table[i] = decodeSample(i);
  return table;
}

function buildEncode(encodeSample: (v: number) => number): Uint8Array {
  // Indexed by the sample's 16 bits as unsigned: sample & 0xffff.
  const table = new Uint8Array(65536);
  for (let i = 0; i < 65536; i++) table[i] = encodeSample((i << 16) >> 16);
  return table;
}

export const MULAW_DECODE: Int16Array = buildDecode(mulaw.decodeSample);
export const ALAW_DECODE: Int16Array = buildDecode(alaw.decodeSample);
export const MULAW_ENCODE: Uint8Array = buildEncode(mulaw.encodeSample);
export const ALAW_ENCODE: Uint8Array = buildEncode(alaw.encodeSample);

/** Samples carried by `byteLength` bytes of `codec`; throws `odd_length` for half a PCM16 sample. */
export function samplesIn(codec: Codec, byteLength: number): number {
  if (codec !== 'slin') return byteLength;
  if ((byteLength & 1) !== 0) {
    throw new BridgeError('odd_length', `PCM16 audio must have an even byte count, got ${byteLength}`);
  }
  return byteLength >> 1;
}

/** Bytes that `samples` samples take in `codec`. */
export function bytesFor(codec: Codec, samples: number): number {
  return codec === 'slin' ? samples * 2 : samples;
}

/**
 * PCM16 LE bytes as an Int16Array: a view when the bytes are 2-aligned (the usual case: Buffer's pool
 * aligns to 8), else a copy into `scratch` (which must hold the samples). Odd byte counts throw.
 */
export function pcm16View(bytes: Uint8Array, scratch?: Int16Array): Int16Array {
  const n = samplesIn('slin', bytes.length);
  if (LITTLE_ENDIAN && (bytes.byteOffset & 1) === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, n);
  const out = scratch !== undefined && scratch.length >= n ? scratch.subarray(0, n) : new Int16Array(n);
  for (let i = 0, j = 0; i < n; i++, j += 2) out[i] = ((bytes[j]! | (bytes[j + 1]! << 8)) << 16) >> 16;
  return out;
}

/**
 * Decodes `src` (in `codec`) into `out`, which must hold `samplesIn(codec, src.byteLength)` samples.
 * Returns the sample count.
 */
export function decodeInto(codec: Codec, src: Uint8Array, out: Int16Array): number {
  const n = samplesIn(codec, src.length);
  if (out.length < n) throw new RangeError(`decode output holds ${out.length} samples, needs ${n}`);
  if (codec === 'slin') {
    if (LITTLE_ENDIAN) {
      // A byte copy handles any alignment of src and never reinterprets out's buffer.
      new Uint8Array(out.buffer, out.byteOffset, n * 2).set(src);
    } else {
      for (let i = 0, j = 0; i < n; i++, j += 2) out[i] = ((src[j]! | (src[j + 1]! << 8)) << 16) >> 16;
    }
    return n;
  }
  const table = codec === 'pcmu' ? MULAW_DECODE : ALAW_DECODE;
  for (let i = 0; i < n; i++) out[i] = table[src[i]!]!;
  return n;
}

/**
 * Encodes the first `n` samples of `src` (all by default) into `out` from byte `at` (default 0) in
 * `codec`. Returns the bytes written.
 */
export function encodeInto(codec: Codec, src: Int16Array, out: Uint8Array, n = src.length, at = 0): number {
  const bytes = bytesFor(codec, n);
  if (out.length - at < bytes)
    throw new RangeError(`encode output holds ${out.length - at} bytes, needs ${bytes}`);
  if (codec === 'slin') {
    if (LITTLE_ENDIAN && n === src.length && at === 0) {
      out.set(new Uint8Array(src.buffer, src.byteOffset, bytes));
    } else {
      for (let i = 0, j = at; i < n; i++, j += 2) {
        const v = src[i]!;
        out[j] = v & 0xff;
        out[j + 1] = (v >> 8) & 0xff;
      }
    }
    return bytes;
  }
  const table = codec === 'pcmu' ? MULAW_ENCODE : ALAW_ENCODE;
  for (let i = 0; i < n; i++) out[at + i] = table[src[i]! & 0xffff]!;
  return bytes;
}

/**
 * Base64 to bytes with one decode and no further copy (Buffer is a Uint8Array). Throws `bad_base64` for
 * a length that is not a multiple of 4 or characters outside the alphabet. Buffer.from() skips junk
 * silently, so junk shows as a decoded length short of what the text's length promises: checking that
 * costs nothing, where a regular expression over a 20 ms payload costs ~1 us, twice the decode itself.
 * (The URL-safe alphabet, `-` and `_`, decodes too; that is harmless.)
 */
export function fromBase64(text: string): Uint8Array {
  const len = text.length;
  if ((len & 3) !== 0) throw badBase64();
  const pad = len === 0 ? 0 : text.charCodeAt(len - 1) !== 61 ? 0 : text.charCodeAt(len - 2) !== 61 ? 1 : 2;
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== (len >> 2) * 3 - pad) throw badBase64();
  return bytes;
}

function badBase64(): BridgeError {
  return new BridgeError('bad_base64', 'payload must be base64 (RFC 4648, padded to a multiple of 4)');
}

/** Bytes to base64 through a Buffer view over the same memory (no copy). */
export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64');
}
