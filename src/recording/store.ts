/**
 * Where recordings live: `RECORDINGS_DIR/<tenant>/<recording_id>.wav` with its metadata beside it in
 * `<recording_id>.json` (the sidecar). The tenant's folder name is its name in base64url, so any tenant
 * name is one safe path segment. The sidecar is written when the recording starts (`in_progress: true`)
 * and rewritten when it ends; it is replaced by a rename, so a reader never sees half of one.
 *
 * Files on disk are the whole truth: a restart loses nothing, and every instance sees what its own
 * RECORDINGS_DIR holds (instances sharing one volume see each other's recordings; otherwise a recording
 * is listed and served by the instance that held the call).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HEADER_BYTES } from './wav-file.js';

export interface RecordingMeta {
  readonly recording_id: string;
  readonly session_id: string;
  readonly tenant: string;
  /** ISO 8601, when the recording began (the session's start on this bridge). */
  readonly started_at: string;
  /** The audio in the file, ms (frames / rate, rounded). */
  readonly duration_ms: number;
  /** The file's size, header included. */
  readonly bytes: number;
  readonly sample_rate: number;
  readonly channels: 2;
  /** True while the call is still being written. */
  readonly in_progress: boolean;
  /** Set when the disk stopped the recording: the system's error code (ENOSPC, EIO, ...). */
  readonly failed?: string;
}

/** recording_id: `rec_` and 32 hex digits; anything else never names a file. */
export const RECORDING_ID_PATTERN = '^rec_[0-9a-f]{32}$';
const ID_RE = new RegExp(RECORDING_ID_PATTERN);

export function newRecordingId(): string {
  return `rec_${randomUUID().replaceAll('-', '')}`;
}

export class RecordingStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  tenantDir(tenant: string): string {
    return join(this.dir, `t_${Buffer.from(tenant, 'utf8').toString('base64url')}`);
  }

  wavPath(tenant: string, id: string): string {
    return join(this.tenantDir(tenant), `${id}.wav`);
  }

  /** Creates the tenant's folder (and RECORDINGS_DIR) when missing. */
  async prepare(tenant: string): Promise<void> {
    await mkdir(this.tenantDir(tenant), { recursive: true });
  }

  async writeMeta(meta: RecordingMeta): Promise<void> {
    const dir = this.tenantDir(meta.tenant);
    const tmp = join(dir, `.${meta.recording_id}.json.tmp`);
    await writeFile(tmp, `${JSON.stringify(meta)}\n`);
    await rename(tmp, join(dir, `${meta.recording_id}.json`));
  }

  /** One recording of the tenant, or undefined (another tenant's, or none, or a malformed id). */
  async get(tenant: string, id: string): Promise<RecordingMeta | undefined> {
    if (!ID_RE.test(id)) return undefined;
    return this.#read(join(this.tenantDir(tenant), `${id}.json`), tenant);
  }

  /** The tenant's recordings, newest first; only those of `sessionId` when given. */
  async list(tenant: string, sessionId?: string): Promise<RecordingMeta[]> {
    const dir = this.tenantDir(tenant);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return [];
      throw err;
    }
    const out: RecordingMeta[] = [];
    for (const name of names) {
      if (!name.endsWith('.json') || !ID_RE.test(name.slice(0, -5))) continue;
      const meta = await this.#read(join(dir, name), tenant);
      if (meta !== undefined && (sessionId === undefined || meta.session_id === sessionId)) out.push(meta);
    }
    out.sort((a, b) =>
      a.started_at < b.started_at
        ? 1
        : a.started_at > b.started_at
          ? -1
          : a.recording_id < b.recording_id
            ? 1
            : -1,
    );
    return out;
  }

  /** Removes a recording's file and sidecar; false when there was none. */
  async remove(tenant: string, id: string): Promise<boolean> {
    if (!ID_RE.test(id)) return false;
    const dir = this.tenantDir(tenant);
    const gone = await unlinkIfThere(join(dir, `${id}.json`));
    await unlinkIfThere(join(dir, `${id}.wav`));
    return gone;
  }

  /**
   * Removes every recording whose file was last written more than `maxAgeMs` before `now` (a file
   * without its sidecar too). Returns how many recordings went. Recordings in progress are written to
   * at least every few seconds, so they are never that old.
   */
  async sweep(maxAgeMs: number, now = Date.now()): Promise<number> {
    let removed = 0;
    for (const dir of await this.#tenantDirs()) {
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        if (!name.endsWith('.wav') || !ID_RE.test(name.slice(0, -4))) continue;
        const wav = join(dir, name);
        const s = await stat(wav).catch(() => undefined);
        if (s === undefined || now - s.mtimeMs <= maxAgeMs) continue;
        await unlinkIfThere(join(dir, `${name.slice(0, -4)}.json`));
        if (await unlinkIfThere(wav)) removed++;
      }
    }
    return removed;
  }

  /**
   * Finishes recordings an instance stopped writing without closing (a crash, a kill): a sidecar still
   * `in_progress` whose file has not grown for `staleMs` gets its WAV sizes patched from the file's size
   * and its metadata made final with `failed: "interrupted"`. `live` names the recordings this instance
   * is writing (never touched). Returns how many were finished.
   */
  async repair(staleMs: number, live: ReadonlySet<string>, now = Date.now()): Promise<number> {
    let repaired = 0;
    for (const dir of await this.#tenantDirs()) {
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const id = name.slice(0, -5);
        if (!name.endsWith('.json') || !ID_RE.test(id) || live.has(id)) continue;
        const meta = await this.#readAny(join(dir, name));
        if (meta === undefined || !meta.in_progress) continue;
        const wav = join(dir, `${id}.wav`);
        const s = await stat(wav).catch(() => undefined);
        if (s === undefined || now - s.mtimeMs <= staleMs) continue;
        const frames = Math.max(0, Math.floor((s.size - HEADER_BYTES) / 4));
        await patchSizes(wav, frames * 4);
        await this.writeMeta({
          ...meta,
          duration_ms: Math.round((frames * 1000) / meta.sample_rate),
          bytes: HEADER_BYTES + frames * 4,
          in_progress: false,
          failed: meta.failed ?? 'interrupted',
        });
        repaired++;
      }
    }
    return repaired;
  }

  async #tenantDirs(): Promise<string[]> {
    try {
      return (await readdir(this.dir)).filter((t) => t.startsWith('t_')).map((t) => join(this.dir, t));
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return [];
      throw err;
    }
  }

  async #readAny(path: string): Promise<RecordingMeta | undefined> {
    try {
      return JSON.parse(await readFile(path, 'utf8')) as RecordingMeta;
    } catch {
      return undefined;
    }
  }

  async #read(path: string, tenant: string): Promise<RecordingMeta | undefined> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return undefined;
      throw err;
    }
    try {
      const meta = JSON.parse(text) as RecordingMeta;
      // The folder is the tenant's; the sidecar must agree (a file copied across folders is not served).
      return meta.tenant === tenant ? meta : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Writes the RIFF and data sizes of a 44-byte-header WAV holding `dataBytes` of audio. */
async function patchSizes(path: string, dataBytes: number): Promise<void> {
  const h = await open(path, 'r+');
  try {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(HEADER_BYTES - 8 + dataBytes, 0);
    await h.write(b, 0, 4, 4);
    b.writeUInt32LE(dataBytes, 0);
    await h.write(b, 0, 4, 40);
  } finally {
    await h.close();
  }
}

async function unlinkIfThere(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return false;
    throw err;
  }
}
