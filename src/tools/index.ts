/**
 * The model acting on the call (CONTRACT §10), as a bridge assembles it: `createTools(ctx).open` is
 * what `BridgeContext.tools` holds (app.ts), opened by each session whose bot has tools or an idle
 * policy (src/media/call-tools.ts). The folder's files, in the order a call meets them:
 *
 *   settings.ts  the settings' rules (the registry declares the fields with them: src/dialects/bot/tools.ts)
 *   call.ts      one call's tools: calls checked, run, answered, counted; end_call
 *   lines.ts     where they sit on the call's two lines
 *   builtins.ts  end_call, consult, conference, send_dtmf, send_message
 *   webhook.ts   a webhook tool's signed POST (signature.ts), bounded
 *   schema.ts    arguments checked against JSON Schema (ajv)
 *   hold.ts      hold audio while a tool runs; idle.ts the idle policy
 */
import type { Clock } from '../clock.js';
import type { BridgeContext } from '../context.js';
import type { OpenCallTools } from '../media/call-tools.js';
import { openCallTools } from './call.js';
import { createWebhookAgent } from './webhook.js';

export interface Tools {
  readonly open: OpenCallTools;
  /** Closes the webhook tools' connections (the calls have ended first). */
  close(): Promise<void>;
}

/** `clock`: the calls' clock (`ctx.clock` by default), which the idle and hold timers run on. */
export function createTools(ctx: BridgeContext, clock: Clock = ctx.clock): Tools {
  const agent = createWebhookAgent();
  return {
    open: (setup) => openCallTools({ ctx, clock, agent }, setup),
    close: () => agent.close(),
  };
}
