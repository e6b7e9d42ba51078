/**
 * A caller's digit toward an `openai-realtime` bot, as BOT_DTMF (or the tenant's `bot.dtmf`) says: a user
 * text item (`text`), the item and a response at once (`respond`), or nothing (`ignore`); a value it does
 * not know is refused naming the field.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRealtimeEmulator, type RealtimeEmulator } from '../../src/emulator/realtime/server.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { quietFor, waitFor } from '../helpers/wait.js';

let emulator: RealtimeEmulator | undefined;
let bridge: TestBridge | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await emulator?.close();
  emulator = undefined;
});

async function callWithDigit(mode: string | undefined) {
  emulator = createRealtimeEmulator();
  await emulator.listen(0);
  bridge = await startBridge({
    BOT_URL: emulator.wsUrl('gpt-realtime'),
    BOT_DIALECT: 'openai-realtime',
    BOT_API_KEY: 'sk-test',
    ...(mode !== undefined && { BOT_DTMF: mode }),
  });
  const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken() });
  providers.push(p);
  await p.start('dtmf-call', { media: { codec: 'pcmu', sample_rate: 8000 } });
  const conn = await emulator.waitForSession(1, 10_000);
  await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the model session');
  p.send({ event: 'dtmf', digit: '5' });
  // A digit after the first: everything for the first has been sent by the time this one's item is in.
  p.send({ event: 'dtmf', digit: '7' });
  return conn;
}

describe('DTMF toward an openai-realtime bot', () => {
  it.each([
    [undefined, ['[DTMF 5]', '[DTMF 7]'], 0],
    ['respond', ['[DTMF 5]', '[DTMF 7]'], 2],
  ])('BOT_DTMF=%s: text items, and a response each only with respond', async (mode, texts, responses) => {
    const conn = await callWithDigit(mode);
    const items = () =>
      conn.record.events
        .filter((e) => e.type === 'conversation.item.create')
        .map((e) => (e.event as { item: { content: { text: string }[] } }).item.content[0]!.text);
    await waitFor(() => items().length === 2, 5_000, 'two text items');
    expect(items()).toEqual(texts);
    expect(conn.record.events.filter((e) => e.type === 'response.create')).toHaveLength(responses);
  });

  it('BOT_DTMF=ignore sends nothing; a bad value stops start-up naming the variable', async () => {
    const conn = await callWithDigit('ignore');
    // Nothing is to come: the text mode's items arrive within milliseconds, so 500 ms of none shows it.
    await quietFor(500, 'a text item for the digit');
    expect(conn.record.events.filter((e) => e.type === 'conversation.item.create')).toHaveLength(0);
    await expect(
      startBridge({ BOT_URL: 'ws://127.0.0.1:1', BOT_DIALECT: 'openai-realtime', BOT_DTMF: 'beep' }),
    ).rejects.toThrow(/BOT_DTMF must be one of text, respond, ignore/);
  });
});
