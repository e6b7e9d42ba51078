/**
 * The `jambonz` provider dialect, declared: jambonz `listen` (subprotocol `audio.jambonz.org`) at
 * `/v1/media/jambonz[/<tenant>]`, authenticated by HTTP Basic (`wsAuth`). Its wire:
 * src/media/providers/jambonz.ts; its emulator twin: src/emulator/dialects/jambonz.ts.
 */
import type { ProviderDialectDecl } from '../types.js';

export const jambonzProvider = {
  name: 'jambonz',
  platform: 'jambonz',
  endpoint: 'path',
  credential: {
    fields: {
      username: { kind: 'name', env: 'JAMBONZ_WS_USERNAME' },
      password: { kind: 'secret', env: 'JAMBONZ_WS_PASSWORD' },
    },
  },
  env: [
    {
      name: 'JAMBONZ_WS_USERNAME',
      type: 'text',
      accepts: 'any text without a colon',
      defaultRule: 'unset: jambonz streams of tenant default are refused (401)',
      description:
        "The HTTP Basic user name of tenant `default`'s jambonz listen streams (the listen verb's `wsAuth.username`).",
    },
    {
      name: 'JAMBONZ_WS_PASSWORD',
      type: 'secret',
      accepts: 'any text',
      defaultRule: 'unset: jambonz streams of tenant default are refused (401)',
      description:
        "The HTTP Basic password of tenant `default`'s jambonz listen streams (`wsAuth.password`), with `JAMBONZ_WS_USERNAME`.",
    },
  ],
} as const satisfies ProviderDialectDecl;
