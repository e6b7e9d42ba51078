#!/usr/bin/env node
/**
 * `npm run token -- [--media] [--scope "a b"] [--tenant T] [--secret S] [--ttl SECONDS]`
 * Mints an HS256 development token. Without --secret it uses the secret the bridge would use with the
 * same environment: MEDIA_SECRET for --media, AUTH_JWT_SECRET otherwise (development defaults if unset).
 * A REST token gets every scope unless --scope names some.
 */
import { parseArgs } from 'node:util';
import { mintToken } from '../auth/jwt.js';
import { ALL_SCOPES as SCOPES } from '../auth/scopes.js';
import { DEV_AUTH_JWT_SECRET, DEV_MEDIA_SECRET } from '../config.js';

const ALL_SCOPES = SCOPES.join(' ');

const { values } = parseArgs({
  options: {
    media: { type: 'boolean', default: false },
    scope: { type: 'string', default: ALL_SCOPES },
    tenant: { type: 'string' },
    secret: { type: 'string' },
    ttl: { type: 'string', default: '3600' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  process.stdout.write(
    `usage: npm run token -- [--media] [--scope "${ALL_SCOPES}"] [--tenant T] [--secret S] [--ttl SECONDS]\n` +
      `  --scope  the REST token's scopes, space-separated (default: all of them, "${ALL_SCOPES}")\n`,
  );
  process.exit(0);
}
const ttl = Number(values.ttl);
if (!Number.isInteger(ttl) || ttl <= 0) {
  process.stderr.write(
    `--ttl must be a positive whole number of seconds, got ${JSON.stringify(values.ttl)}\n`,
  );
  process.exit(2);
}
const secret =
  values.secret ??
  (values.media
    ? process.env.MEDIA_SECRET || DEV_MEDIA_SECRET
    : process.env.AUTH_JWT_SECRET || DEV_AUTH_JWT_SECRET);
const token = await mintToken({
  secret,
  ttlSeconds: ttl,
  ...(values.tenant !== undefined ? { tenant: values.tenant } : {}),
  ...(values.media ? {} : { scopes: values.scope.split(' ').filter((s) => s !== '') }),
});
process.stdout.write(`${token}\n`);
