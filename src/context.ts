/**
 * What the I/O shells of one bridge instance share.
 */
import type { Config } from './config.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { SessionRegistry, TenantStore } from './state/types.js';

export interface BridgeContext {
  readonly config: Config;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly sessions: SessionRegistry;
  readonly tenants: TenantStore;
  /** Set once shutdown begins: readiness turns false and no new sessions are accepted. */
  draining: boolean;
}
