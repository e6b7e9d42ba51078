/**
 * The message records' store: in memory for one instance, or in the Redis the state store connected
 * (STATE_STORE), so every instance sees every send and webhook event.
 */
import type { Config } from '../config.js';
import type { RedisLink } from '../state/redis-link.js';
import type { MessageStore } from './records.js';
import { MemoryMessageStore } from './store-memory.js';
import { RedisMessageStore } from './store-redis.js';

export function createMessageStore(config: Config, link: RedisLink | undefined): MessageStore {
  return link === undefined
    ? new MemoryMessageStore(config.messageRetentionMs)
    : new RedisMessageStore(link, config.messageRetentionMs);
}
