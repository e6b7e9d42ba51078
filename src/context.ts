/**
 * What the I/O shells of one bridge instance share.
 */
import type { RestVerifier } from './auth/jwt.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { HeldUp } from './held-up.js';
import type { Logger } from './log.js';
import type { CallEvents } from './media/call-events.js';
import type { OpenCallTools } from './media/call-tools.js';
import type { MessageStore } from './messaging/records.js';
import type { MessagingClient } from './messaging/types.js';
import type { Metrics } from './metrics.js';
import type { ProviderClient } from './provider/client.js';
import type { Recordings } from './recording/index.js';
import type { SessionEventBus, SessionRegistry, TenantStore } from './state/types.js';

export interface BridgeContext {
  readonly config: Config;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly sessions: SessionRegistry;
  readonly tenants: TenantStore;
  /** The provider's voice API; undefined when none is configured (call control then answers 503). */
  readonly provider: ProviderClient | undefined;
  /** The provider's messaging API (chat and RCS); undefined when none is configured (its routes answer 503). */
  readonly messaging: MessagingClient | undefined;
  /** Records of the messages sent, their webhook events, and the webhook dedupe keys. */
  readonly messages: MessageStore;
  /** Events for a live session's bot, delivered by the instance holding the session. */
  readonly sessionEvents: SessionEventBus;
  /** Live events of the calls this instance holds, for `GET /v1/events`. */
  readonly callEvents: CallEvents;
  /** Verifies REST bearer tokens (one instance, so a remote JWKS is fetched and cached once). */
  readonly verifyRest: RestVerifier;
  /** Call recordings: which calls, the files, retention (src/recording/). */
  readonly recordings: Recordings;
  /**
   * The clock of the calls' timers: the pacing loops', and through them every timer of a call (a
   * connection's session_start and token bounds, a bot's redials). The system's; tests drive their own.
   */
  readonly clock: Clock;
  /** A call's tools (src/tools/, set by app.ts); undefined: no call gets any. */
  readonly tools?: OpenCallTools;
  /** When this bridge was last held up (its event loop or a DSP worker late): see src/held-up.ts. */
  readonly heldUp: HeldUp;
  /** Set once shutdown begins: readiness turns false and no new sessions are accepted. */
  draining: boolean;
}
