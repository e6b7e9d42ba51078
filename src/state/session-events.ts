/**
 * Events for a live session's bot (a message's status, a tapped button), delivered by the instance
 * holding the session: at once when that is this one; with a shared store, published on the store's
 * channel for the instance that is (each instance tries its own sessions; the holder delivers).
 */
import type { Logger } from '../log.js';
import type { RedisLink } from './redis-link.js';
import type { LocalSessionDelivery, SessionEventBus } from './types.js';

/** One instance: only its own sessions exist. */
export class LocalSessionEvents implements SessionEventBus {
  #local: LocalSessionDelivery | undefined;

  attach(local: LocalSessionDelivery): void {
    this.#local = local;
  }

  async deliver(tenant: string, sessionId: string, event: object): Promise<'local' | 'none'> {
    return this.#local?.(tenant, sessionId, event) === true ? 'local' : 'none';
  }
}

export class RedisSessionEvents implements SessionEventBus {
  readonly #link: RedisLink;
  #local: LocalSessionDelivery | undefined;

  constructor(link: RedisLink, log: Logger) {
    this.#link = link;
    link.onMessage((m) => {
      if (m.t !== 'session_event' || m.from === link.instanceId) return;
      const { tenant, session_id: sessionId, event } = m;
      if (typeof tenant !== 'string' || typeof sessionId !== 'string') return;
      if (event === null || typeof event !== 'object') return;
      try {
        this.#local?.(tenant, sessionId, event);
      } catch (err) {
        log.warn({ session_id: sessionId, err: (err as Error).message }, 'session event delivery failed');
      }
    });
  }

  attach(local: LocalSessionDelivery): void {
    this.#local = local;
  }

  async deliver(tenant: string, sessionId: string, event: object): Promise<'local' | 'published'> {
    if (this.#local?.(tenant, sessionId, event) === true) return 'local';
    await this.#link.publish('session_event', { t: 'session_event', tenant, session_id: sessionId, event });
    return 'published';
  }
}
