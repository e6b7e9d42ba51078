/**
 * `POST /v1/media-tokens` (scope `media:call`): a short-lived media token for one softphone call of the
 * token's tenant, signed HS256 with the tenant's media secret, and the absolute URL of `/v1/media` to
 * use it on. The console's "Call the bot" asks for one per call; any client placing a call from a
 * browser can do the same without ever holding the media secret.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SignJWT } from 'jose';
import type { RestVerifier } from '../auth/jwt.js';
import type { BridgeContext } from '../context.js';
import { BridgeError } from '../errors.js';
import { principal, scopeGuard } from './guard.js';
import { BEARER, errorResponses } from './schemas.js';

/** Long enough to start a call after asking; the token's lifetime also bounds the call's (1008 at expiry). */
export const MEDIA_TOKEN_TTL_SECONDS = 300;

const MEDIA_TOKEN_SCHEMA = {
  type: 'object',
  description: 'A media token for one call and where to use it',
  properties: {
    token: { type: 'string', description: 'a JWT for /v1/media, as ?token= or a bearer token' },
    expires_at: { type: 'string', format: 'date-time' },
    media_url: { type: 'string', description: 'the absolute ws:// or wss:// URL of /v1/media' },
  },
  required: ['token', 'expires_at', 'media_url'],
} as const;

/**
 * The media endpoint as the client reached this bridge: `wss` behind TLS, and through a proxy named by
 * TRUST_PROXY its X-Forwarded-Proto and X-Forwarded-Host (fastify reads them only from trusted proxies).
 */
export function mediaUrlOf(req: FastifyRequest): string {
  const scheme = req.protocol === 'https' ? 'wss' : 'ws';
  return `${scheme}://${req.host}/v1/media`;
}

export function registerMediaTokenRoutes(
  app: FastifyInstance,
  ctx: BridgeContext,
  verify: RestVerifier,
): void {
  app.register(async (scope) => {
    scope.post(
      '/v1/media-tokens',
      {
        onRequest: scopeGuard(verify, 'media:call'),
        schema: {
          tags: ['media'],
          summary: "A 5-minute media token for one call of the token's tenant (the console's softphone)",
          security: BEARER,
          response: { 201: MEDIA_TOKEN_SCHEMA, ...errorResponses(401, 403, 409) },
        },
      },
      async (req, reply) => {
        const p = principal(req);
        const secret = await ctx.tenants.getMediaSecret(p.tenant);
        if (secret === undefined) {
          throw new BridgeError(
            'conflict',
            `tenant "${p.tenant}" has no media secret: set one with PUT /v1/media-stream (field media_secret) first`,
          );
        }
        const iat = Math.floor(Date.now() / 1000);
        const exp = iat + MEDIA_TOKEN_TTL_SECONDS;
        // One call: a fresh id, and who asked for it, for whoever reads the verified claims.
        const token = await new SignJWT({ tenant: p.tenant })
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setIssuedAt(iat)
          .setExpirationTime(exp)
          .setSubject(p.subject ?? 'softphone')
          .setJti(randomUUID())
          .sign(new TextEncoder().encode(secret));
        const expiresAt = new Date(exp * 1000);
        reply.code(201);
        return { token, expires_at: expiresAt.toISOString(), media_url: mediaUrlOf(req) };
      },
    );
  });
}
