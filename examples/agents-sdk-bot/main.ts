/**
 * `npm run example:agents-bot`: the Agents SDK bot of bot.ts on :8765 (PORT), its model the Realtime
 * stand-in started here in the same process unless REALTIME_URL names another server.
 */
import { createRealtimeEmulator } from '../../src/emulator/realtime/server.js';
import { startAgentsBot } from './bot.js';

const port = Number(process.env.PORT ?? 8765);
let realtimeUrl = process.env.REALTIME_URL;
let standIn: ReturnType<typeof createRealtimeEmulator> | undefined;
if (realtimeUrl === undefined) {
  standIn = createRealtimeEmulator();
  await standIn.listen(0);
  realtimeUrl = standIn.wsUrl('gpt-realtime');
  console.log(`agents-sdk-bot: the model is the local Realtime stand-in at ${realtimeUrl}`);
}
const bot = await startAgentsBot({
  port,
  realtimeUrl,
  apiKey: process.env.OPENAI_API_KEY ?? 'sk-stand-in',
  instructions: process.env.INSTRUCTIONS ?? 'You answer the phone for a small bakery. Be brief.',
});
console.log(`agents-sdk-bot: listening at ${bot.url}`);
console.log(`  run the bridge with: BOT_URL=${bot.url} BOT_DIALECT=twilio npm start`);
console.log('  then place a call:   npm run call');
const stop = async () => {
  await bot.close();
  await standIn?.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
