/**
 * Bearer-token guard for REST routes: 401 without a valid token, 403 without the route's scope.
 */
import type { FastifyRequest } from 'fastify';
import { assertScope, type Principal, type RestVerifier } from '../auth/jwt.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the scope guard on authenticated routes. */
    principal?: Principal;
  }
}

/** A fastify `preHandler` that admits tokens holding `scope`. */
export function scopeGuard(verify: RestVerifier, scope: string) {
  return async (req: FastifyRequest): Promise<void> => {
    const principal = await verify(req.headers.authorization);
    assertScope(principal, scope);
    req.principal = principal;
  };
}

/**
 * As `scopeGuard`, also taking the token as `?token=` when no Authorization header is sent (browsers
 * cannot set headers on EventSource or WebSocket).
 */
export function scopeGuardOrQuery(verify: RestVerifier, scope: string) {
  return async (req: FastifyRequest): Promise<void> => {
    const principal = await verify(authorizationOf(req.headers.authorization, req.query));
    assertScope(principal, scope);
    req.principal = principal;
  };
}

/** The Authorization header, else a Bearer header made of a `token` query parameter. */
export function authorizationOf(header: string | undefined, query: unknown): string | undefined {
  if (header !== undefined) return header;
  const token = (query as { token?: unknown } | undefined)?.token;
  return typeof token === 'string' && token !== '' ? `Bearer ${token}` : undefined;
}

/** The principal of a guarded route (the guard has run). */
export function principal(req: FastifyRequest): Principal {
  if (req.principal === undefined) throw new Error('route is missing its scope guard');
  return req.principal;
}
