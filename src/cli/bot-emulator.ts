#!/usr/bin/env node
/**
 * `npm run bot-emulator -- --dialect <name> [--port N] [--host H] [--api-key K] [--reply-ms N]
 *  [--log-level L] [the dialect's flags]`: a local stand-in for a speech-to-speech bot dialect's server,
 * for bots and tests without the vendor's key; one for each dialect src/emulator/stand-ins.ts lists.
 */
import { runStandIn } from './stand-in-cli.js';

await runStandIn(process.argv.slice(2), { command: 'bot-emulator' });
