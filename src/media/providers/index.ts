/**
 * The provider dialects served on a WebSocket path, by name: `/v1/media` is the registry's root dialect
 * (`default`), `/v1/media/<name>[/<tenant>]` the others (src/media/dialects.ts holds them all, the TCP
 * ones too).
 */
import { PATH_DIALECTS, type PathDialectName } from '../../dialects/index.js';
import { PROVIDER_DIALECT_MODULES } from '../dialects.js';
import type { ProviderDialect } from './types.js';

export const DIALECTS = Object.fromEntries(
  PATH_DIALECTS.map((name) => [name, PROVIDER_DIALECT_MODULES[name]]),
) as Readonly<Record<PathDialectName, ProviderDialect>>;

export type * from './types.js';
