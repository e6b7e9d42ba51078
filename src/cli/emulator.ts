#!/usr/bin/env node
/**
 * `npm run emulator -- --port P --jwt-secret S [--dial-plan F] [--dial-timeout-ms N] [--host H]
 *  [--accept-any-session] [messaging flags]`: the provider emulator on its own, serving the provider's voice,
 * chat and RCS APIs under /v1, placing synthetic calls with POST /emulator/calls, and posting messaging
 * webhooks to --webhook-url.
 */
import { parseArgs } from 'node:util';
import { DEV_AUTH_JWT_SECRET } from '../config.js';
import { type DialPlan, loadDialPlan } from '../emulator/dial-plan.js';
import type { MessagingOptions } from '../emulator/messaging/emulator.js';
import { createEmulator, DEFAULT_DIAL_TIMEOUT_MS, type Emulator } from '../emulator/server.js';
import { createLogger } from '../log.js';

const USAGE = `usage: npm run emulator -- [--port 9090] [--host 127.0.0.1] [--jwt-secret S] [--dial-plan plan.json]
                            [--dial-timeout-ms 20000] [--accept-any-session] [--log-level info]
  --jwt-secret          HS256 secret of the bearer tokens it accepts (default: EMULATOR_JWT_SECRET, else the
                        development REST secret, so "npm run token" tokens work)
  --dial-plan           JSON: { "<number>": { "dialStatus": "ANSWER|NOANSWER|BUSY|CONGESTION|CHANUNAVAIL",
                        "afterMs": N } }; numbers not listed answer after 1 s
  --accept-any-session  take call control for any session id (for a bridge run separately, whose calls
                        the emulator did not place)
messaging (chat and RCS; control API under /emulator/messaging/):
  --messaging-api-key   API key of the default workspace, "vbk_" + 32 hex (default: generated, printed)
  --webhook-url         where delivery and button webhooks are posted
  --webhook-token       sent with each webhook post as "Authorization: Bearer <token>" (default: none)
  --review-delay-ms     PENDING to reviewed after this long (default 1000; --review-delay-ms=-1: only by
                        a control call)
  --review-outcome      approve | reject (default approve)
  --delivery-delay-ms   sent to delivered (default 100)
  --read-delay-ms       delivered to read (default 200; --read-delay-ms=-1: no read receipts)
  --campaign-rate       campaign messages per second per account (default 80)
  --webhook-attempts    attempts per webhook post (default 5)
  --webhook-backoff-ms  wait before the first retry, doubled after each (default 200)
`;

function fail(message: string): never {
  process.stderr.write(`emulator: ${message}\n${USAGE}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9090' },
    host: { type: 'string', default: '127.0.0.1' },
    'jwt-secret': { type: 'string' },
    'dial-plan': { type: 'string' },
    'dial-timeout-ms': { type: 'string', default: String(DEFAULT_DIAL_TIMEOUT_MS) },
    'accept-any-session': { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'info' },
    'messaging-api-key': { type: 'string' },
    'webhook-url': { type: 'string' },
    'webhook-token': { type: 'string' },
    'review-delay-ms': { type: 'string' },
    'review-outcome': { type: 'string' },
    'delivery-delay-ms': { type: 'string' },
    'read-delay-ms': { type: 'string' },
    'campaign-rate': { type: 'string' },
    'webhook-attempts': { type: 'string' },
    'webhook-backoff-ms': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535)
  fail(`--port must be 0 to 65535, got ${values.port}`);
const dialTimeoutMs = Number(values['dial-timeout-ms']);
if (!Number.isInteger(dialTimeoutMs) || dialTimeoutMs < 0) {
  fail(`--dial-timeout-ms must be a whole number of milliseconds, got ${values['dial-timeout-ms']}`);
}
let dialPlan: DialPlan = new Map();
if (values['dial-plan'] !== undefined) {
  try {
    dialPlan = loadDialPlan(values['dial-plan']);
  } catch (err) {
    fail((err as Error).message);
  }
}
/** The entries that are set. */
function defined(o: Record<string, number | undefined>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, number>;
}
/** An integer flag >= min, or undefined when not given. */
function intFlag(name: keyof typeof values, min: number): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) fail(`--${name} must be an integer >= ${min}, got ${String(raw)}`);
  return n;
}
const reviewOutcome = values['review-outcome'];
if (reviewOutcome !== undefined && reviewOutcome !== 'approve' && reviewOutcome !== 'reject') {
  fail(`--review-outcome must be approve or reject, got ${reviewOutcome}`);
}
const messaging: MessagingOptions = {
  ...(values['messaging-api-key'] !== undefined ? { apiKey: values['messaging-api-key'] } : {}),
  ...(values['webhook-url'] !== undefined ? { webhookUrl: values['webhook-url'] } : {}),
  ...(values['webhook-token'] !== undefined ? { webhookToken: values['webhook-token'] } : {}),
  ...(reviewOutcome !== undefined ? { reviewOutcome } : {}),
  ...defined({
    reviewDelayMs: intFlag('review-delay-ms', -1),
    deliveryDelayMs: intFlag('delivery-delay-ms', 0),
    readDelayMs: intFlag('read-delay-ms', -1),
    campaignRatePerSecond: intFlag('campaign-rate', 1),
    webhookMaxAttempts: intFlag('webhook-attempts', 1),
    webhookBackoffMs: intFlag('webhook-backoff-ms', 0),
  }),
};

const jwtSecret = values['jwt-secret'] ?? process.env.EMULATOR_JWT_SECRET ?? DEV_AUTH_JWT_SECRET;
const log = createLogger(values['log-level']).child({ component: 'emulator' });
let emulator: Emulator;
try {
  emulator = await createEmulator({
    jwtSecret,
    dialPlan,
    dialTimeoutMs,
    acceptAnySession: values['accept-any-session'],
    log,
    messaging,
  });
} catch (err) {
  fail((err as Error).message);
}
const m = emulator.messaging;
const url = await emulator.listen(port, values.host);
process.stdout.write(
  [
    `provider emulator listening on ${url}`,
    `  voice API: ${url}/v1 (set PROVIDER_BASE_URL=${url}/v1 on the bridge)`,
    `  tokens: HS256 with ${jwtSecret === DEV_AUTH_JWT_SECRET ? 'the development REST secret (npm run token)' : 'the given secret'}`,
    `  dial plan: ${dialPlan.size} numbers; others answer after 1 s; NOANSWER rings ${dialTimeoutMs} ms`,
    `  synthetic calls: POST ${url}/emulator/calls {"audio":"tone:440","seconds":10}`,
    `  chat and RCS APIs: ${url}/v1 (account "${m.defaultAccountId}")`,
    `  messaging API key: ${m.defaultApiKey}`,
    `  account token: ${m.defaultAccountToken}`,
    `  webhook URL: ${m.webhookView.url ?? `none (set with PUT ${url}/emulator/messaging/webhook {"url":"...","token":"..."})`}${m.webhookView.token_set ? ' (with a bearer token)' : ''}`,
    `  messaging control API: ${url}/emulator/messaging/`,
    '',
  ].join('\n'),
);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  emulator.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
