/**
 * Liveness, readiness and metrics: no auth.
 */
import type { FastifyInstance } from 'fastify';
import type { BridgeContext } from '../context.js';

export function registerHealthRoutes(app: FastifyInstance, ctx: BridgeContext): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    if (ctx.draining) return reply.code(503).send({ ready: false, reason: 'draining' });
    return { ready: true };
  });
  app.get('/metrics', async (_req, reply) => {
    const body = await ctx.metrics.registry.metrics();
    return reply.type(ctx.metrics.registry.contentType).send(body);
  });
}
