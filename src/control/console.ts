/**
 * `GET /console`: the console page and its few assets (src/console/, copied beside the compiled code by
 * `npm run build`), read once at start-up and served from memory. No token is needed for the page
 * itself: it holds no data, and signs in to the REST routes with a token the person types or brings in
 * the URL's fragment. A Content-Security-Policy keeps everything it loads or connects to on this bridge.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { BridgeError } from '../errors.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Self only. `connect-src 'self'` covers the page's REST calls, the SSE stream and its WebSockets on the
 * same host (ws/wss of the page's own origin); `media-src blob:` plays a recording fetched with the
 * bearer token; the audio worklet is a script from 'self'. No inline script or style anywhere.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "media-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

/** The console's files, by name; empty when the folder is missing (a build that did not copy it). */
export function loadConsoleAssets(
  dir = fileURLToPath(new URL('../console/', import.meta.url)),
): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return assets;
  }
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (type !== undefined) assets.set(name, { type, body: readFileSync(join(dir, name)) });
  }
  return assets;
}

function send(reply: FastifyReply, asset: Asset) {
  return reply
    .header('content-type', asset.type)
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache')
    .send(asset.body);
}

export function registerConsoleRoutes(app: FastifyInstance, assets = loadConsoleAssets()): void {
  const page = (reply: FastifyReply) => {
    const index = assets.get('index.html');
    if (index === undefined) {
      throw new BridgeError(
        'not_found',
        'the console is not in this build: src/console/ is copied to dist/console/ by npm run build',
      );
    }
    return send(reply, index);
  };
  app.get('/console', { schema: { hide: true } }, (_req, reply) => page(reply));
  app.get('/console/', { schema: { hide: true } }, (_req, reply) => page(reply));
  app.get('/console/:file', { schema: { hide: true } }, (req, reply) => {
    const { file } = req.params as { file: string };
    const asset = assets.get(file);
    if (asset === undefined) throw new BridgeError('not_found', `the console has no file "${file}"`);
    return send(reply, asset);
  });
}
