/**
 * The signature of a webhook tool's call (CONTRACT §10): `X-Voicebridge-Signature: t=<unix seconds>,
 * v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the tenant's `tool_secret`. The timestamp inside the
 * signed text lets a receiver refuse an old call replayed; `verifySignature` is what a receiver written
 * in TypeScript can use (docs/tools.md shows the same check in a few lines of any language).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Voicebridge-Signature';

/** The header's value for `body` sent at `t` (unix seconds). */
export function signature(secret: string, body: string, t: number): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/**
 * Whether `header` signs `body` with `secret`, at most `toleranceS` from `nowS` (unix seconds). Any
 * `v1=` of the header may match (a receiver rotating its secret checks each key in turn instead).
 */
export function verifySignature(
  header: string | undefined,
  body: string,
  secret: string,
  o: { readonly toleranceS?: number; readonly nowS?: number } = {},
): boolean {
  if (header === undefined) return false;
  const parts = header.split(',').map((p) => p.trim());
  const t = Number(parts.find((p) => p.startsWith('t='))?.slice(2));
  if (!Number.isInteger(t)) return false;
  const now = o.nowS ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (o.toleranceS ?? 300)) return false;
  const want = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return parts
    .filter((p) => p.startsWith('v1='))
    .some((p) => {
      const got = Buffer.from(p.slice(3), 'hex');
      return got.length === want.length && timingSafeEqual(got, want);
    });
}
