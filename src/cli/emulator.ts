#!/usr/bin/env node
/**
 * `npm run emulator -- --port P --jwt-secret S [--dial-plan F] [--dial-timeout-ms N] [--host H]
 *  [--accept-any-session]`: the provider emulator on its own, serving voice.md under /v1 and placing
 * synthetic calls with POST /emulator/calls.
 */
import { parseArgs } from 'node:util';
import { DEV_AUTH_JWT_SECRET } from '../config.js';
import { type DialPlan, loadDialPlan } from '../emulator/dial-plan.js';
import { createEmulator, DEFAULT_DIAL_TIMEOUT_MS } from '../emulator/server.js';
import { createLogger } from '../log.js';

const USAGE = `usage: npm run emulator -- [--port 9090] [--host 127.0.0.1] [--jwt-secret S] [--dial-plan plan.json]
                            [--dial-timeout-ms 20000] [--accept-any-session] [--log-level info]
  --jwt-secret          HS256 secret of the bearer tokens it accepts (default: EMULATOR_JWT_SECRET, else the
                        development REST secret, so "npm run token" tokens work)
  --dial-plan           JSON: { "<number>": { "dialStatus": "ANSWER|NOANSWER|BUSY|CONGESTION|CHANUNAVAIL",
                        "afterMs": N } }; numbers not listed answer after 1 s
  --accept-any-session  take call control for any session id (for a bridge run separately, whose calls
                        the emulator did not place)
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
const jwtSecret = values['jwt-secret'] ?? process.env.EMULATOR_JWT_SECRET ?? DEV_AUTH_JWT_SECRET;
const log = createLogger(values['log-level']).child({ component: 'emulator' });
const emulator = await createEmulator({
  jwtSecret,
  dialPlan,
  dialTimeoutMs,
  acceptAnySession: values['accept-any-session'],
  log,
});
const url = await emulator.listen(port, values.host);
process.stdout.write(
  [
    `provider emulator listening on ${url}`,
    `  voice API: ${url}/v1 (set PROVIDER_BASE_URL=${url}/v1 on the bridge)`,
    `  tokens: HS256 with ${jwtSecret === DEV_AUTH_JWT_SECRET ? 'the development REST secret (npm run token)' : 'the given secret'}`,
    `  dial plan: ${dialPlan.size} numbers; others answer after 1 s; NOANSWER rings ${dialTimeoutMs} ms`,
    `  synthetic calls: POST ${url}/emulator/calls {"audio":"tone:440","seconds":10}`,
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
