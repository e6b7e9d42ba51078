/**
 * The tool settings' one rule that spans the PUT body: a bot with a webhook tool needs a key to sign
 * its calls with (`tool_secret`, top level beside `media_secret`). The fields themselves are declared
 * in the dialect registry (src/dialects/bot/tools.ts) with the rules of settings.ts.
 */
import type { BotSettings } from '../config/bot-settings.js';
import { BridgeError } from '../errors.js';

/**
 * A 400 for a bot with a webhook tool and no key to sign its calls with (`secret`: the one given in
 * the upsert, else the one stored); undefined when there is none or the key is there.
 */
export function unsignedWebhookTool(
  bot: BotSettings | undefined,
  secret: string | undefined,
): BridgeError | undefined {
  if (secret !== undefined) return undefined;
  const i = bot?.tools?.findIndex((t) => typeof t !== 'string') ?? -1;
  if (i < 0) return undefined;
  return new BridgeError(
    'invalid_field',
    `bot.tools[${i}] is a webhook tool, whose calls are signed with the tenant's tool_secret: give tool_secret (16 to 512 characters) in this upsert, or leave the webhook tools out`,
    { field: 'tool_secret' },
  );
}
