#!/usr/bin/env node
/**
 * `npm run realtime-emulator -- [--port 9191] [--host 127.0.0.1] [--api-key K] [--reply-ms N]
 *  [--delta-ms N] [--output-rate-factor N] [--tls-cert F --tls-key F] [--log-level L]`: the OpenAI
 * Realtime stand-in on its own (src/emulator/realtime/), for bots and tests without an OpenAI key; the
 * `openai-realtime` stand-in of `npm run bot-emulator`, under its own name.
 */
import { runStandIn } from './stand-in-cli.js';

await runStandIn(process.argv.slice(2), { command: 'realtime-emulator', only: 'openai-realtime' });
