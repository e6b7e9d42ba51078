/**
 * The OpenAPI document of the bridge's REST API at `/docs/json` (and `/docs/yaml`), and a readable page at
 * `/docs`. It is generated from the route schemas that validate requests, so it cannot drift from them.
 * Register before any route: the generator collects routes as they are added.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export async function registerDocs(app: FastifyInstance, version = '0.1.0'): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'voicebridge',
        version,
        description:
          'REST control plane of the voicebridge media bridge. Every route but health and metrics takes ' +
          '`Authorization: Bearer <JWT>`; errors are `{"error": code, "message": text}`. The media endpoint ' +
          '`GET /v1/media` is a WebSocket (docs/protocol.md in the repository describes it) and is not described here.',
      },
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
      tags: [
        { name: 'media-stream', description: 'scope media:manage' },
        { name: 'sessions', description: 'scope sessions:read' },
        { name: 'call control', description: 'scope calls:control; forwarded to the provider' },
        {
          name: 'messaging',
          description:
            "chat and RCS: a live call's message (calls:control), records (messages:read), templates and campaigns (messages:manage), and the provider's webhook (its own secret). The management routes (scope messages:manage) are an operator scope: they act on the bridge's one provider messaging account, which every tenant's sends share.",
        },
      ],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
}
