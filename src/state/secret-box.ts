/**
 * Seals media secrets before they leave the process for a shared store, so a dump of the store alone
 * does not reveal them: AES-256-GCM with a random 96-bit IV per value, the tenant as associated data
 * (a sealed secret copied onto another tenant does not open), and a version tag for key rotation later.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Key used outside production when STATE_SECRET_KEY is unset (production refuses to start without one). */
export const DEV_STATE_KEY: Buffer = createHash('sha256').update('voicebridge-dev-state-key').digest();

export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
    this.#key = key;
  }

  /** `v1.<base64url(iv | tag | ciphertext)>` */
  seal(plain: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url')}`;
  }

  /** Throws when the value was not sealed with this key for this context (or was altered). */
  open(sealed: string, context: string): string {
    const dot = sealed.indexOf('.');
    if (dot === -1 || sealed.slice(0, dot) !== VERSION) throw new Error('unknown sealed-secret format');
    const raw = Buffer.from(sealed.slice(dot + 1), 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('sealed secret too short');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    );
  }
}
