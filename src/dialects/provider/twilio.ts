/**
 * The `twilio` provider dialect, declared: Twilio Media Streams at `/v1/media/twilio[/<tenant>]`,
 * authenticated by `X-Twilio-Signature`, keyed by the account's auth token. Its wire:
 * src/media/providers/twilio.ts; its emulator twin: src/emulator/dialects/twilio.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const twilioProvider = {
  name: 'twilio',
  platform: 'Twilio',
  endpoint: 'path',
  credential: { fields: { auth_token: { kind: 'secret', env: 'TWILIO_AUTH_TOKEN' } } },
  env: [
    {
      name: 'TWILIO_AUTH_TOKEN',
      type: 'secret',
      accepts: 'any text',
      defaultRule:
        'unset: Twilio streams of tenant default are refused (401), unless it stores provider_auth.twilio',
      description:
        "The auth token of tenant `default`'s Twilio account: `/v1/media/twilio` checks `X-Twilio-Signature` with it.",
    },
  ],
  redact: ['req.headers["x-twilio-signature"]', 'headers["x-twilio-signature"]'],
} as const satisfies ProviderDialectDecl;
