/**
 * The built-ins do what the REST routes do, for this call only: `conference` keeps the session's
 * conferenceNumbers in step and answers the provider's 409 as a `conflict` output; `send_message`
 * follows the chat 24-hour window exactly as the message route does (the same refusal, word for word)
 * and refuses what RCS cannot carry; on a call from another provider dialect, `consult` and `send_dtmf`
 * answer `unsupported_for_dialect` and the call goes on.
 */
import { describe, expect, it } from 'vitest';
import { generateTone } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import type { BotConnection } from '../helpers/bot.js';
import { call } from '../helpers/http-call.js';
import { startMessagingRig } from '../helpers/messaging.js';
import { startRig } from '../helpers/rig.js';

/** Sends a tool call from the test bot and waits for its result's output. */
async function useTool(bot: BotConnection, id: string, name: string, args: unknown) {
  bot.send({ event: 'tool_call', id, name, arguments: args });
  const r = await bot.waitEvent('tool_result', 10_000, (e) => e.id === id);
  return r.output as Record<string, unknown>;
}

describe('built-in tools', () => {
  it('conference: the session keeps its numbers in step; a second add is a conflict output', async () => {
    await using rig = await startRig({
      bot: { echo: false },
      providers: { voice: {} },
      env: { BOT_TOOLS: '["conference"]' },
    });
    await rig.call('conf-call');
    const bot = await rig.bot!.waitConnection();
    const add = await useTool(bot, 'k1', 'conference', { action: 'add', number: '4915100000009' });
    expect(add).toMatchObject({ sessionId: 'conf-call', number: '4915100000009', status: 'answered' });
    const token = await rig.restToken(['sessions:read']);
    const session = await call(rig.http, 'GET', '/v1/sessions/conf-call', { token });
    expect(session.body.conferenceNumbers).toEqual(['4915100000009']);
    const again = await useTool(bot, 'k2', 'conference', { action: 'add', number: '4915100000009' });
    expect(again.error).toBe('conflict');
    expect(again.message).toMatch(/already in the conference/);
    const bad = await useTool(bot, 'k3', 'conference', {
      action: 'delete',
      number: '4915100000009',
      caller_id: '1',
    });
    expect(bad.error).toBe('invalid_arguments');
    const del = await useTool(bot, 'k4', 'conference', { action: 'delete', number: '4915100000009' });
    expect(del).toMatchObject({ number: '4915100000009' });
    expect((await call(rig.http, 'GET', '/v1/sessions/conf-call', { token })).body.conferenceNumbers).toEqual(
      [],
    );
  });

  it('send_message: the 24-hour window and its refusal exactly as the route; RCS takes templates only', async () => {
    const r = await startMessagingRig({
      messaging: { reviewDelayMs: -1, deliveryDelayMs: 20, readDelayMs: -1 },
      env: { BOT_TOOLS: '["send_message"]' },
    });
    try {
      const { bot } = await r.liveCall('msg-call', '+1 (415) 555-0104');
      const text = { channel: 'chat', text: 'Your booking link: https://example.com/b/17' };
      const closed = await useTool(bot, 'm1', 'send_message', text);
      const route = await r.api('POST', '/v1/sessions/msg-call/message', {
        token: await r.token(),
        body: { channel: 'chat', message: { type: 'text', text: { body: text.text } } },
      });
      expect(route.status).toBe(409);
      expect(closed).toEqual(route.body);
      // The caller writes in: the window opens, and the same call of the tool now sends.
      expect(
        (await r.control('POST', '/accounts/default/inbound', { from: '14155550104', text: 'hi' })).status,
      ).toBe(200);
      const sent = await useTool(bot, 'm2', 'send_message', text);
      expect(sent).toEqual({ message_id: expect.stringMatching(/\S/), status: 'sent' });
      // Its delivery events reach the bot, as a route send's do.
      await bot.waitEvent('message_status', 5_000, (e) => e.message_id === sent.message_id);
      const rcsText = await useTool(bot, 'm3', 'send_message', { channel: 'rcs', text: 'hello' });
      expect(rcsText).toMatchObject({
        error: 'invalid_arguments',
        message: expect.stringMatching(/templates only/),
      });
      const both = await useTool(bot, 'm4', 'send_message', { channel: 'chat', text: 'a', template: 'b' });
      expect(both.error).toBe('invalid_arguments');
      const badTemplate = await useTool(bot, 'm5', 'send_message', {
        channel: 'chat',
        template: 'Not A Name',
      });
      expect(badTemplate).toMatchObject({
        error: 'invalid_arguments',
        message: expect.stringMatching(/template.name/),
      });
    } finally {
      await r.close();
    }
  });

  it('on a call of another provider dialect, consult and send_dtmf answer unsupported_for_dialect; the call goes on', async () => {
    await using rig = await startRig({
      bot: { echo: true },
      providers: { voice: {} },
      env: { BOT_TOOLS: '["consult","send_dtmf"]', MEDIA_AUTH: 'none' },
    });
    const rate = 8000;
    const twilio = new SyntheticCall({
      url: `${rig.mediaUrl}/twilio`,
      sessionId: 'CA0000000000000000000000000000tool',
      customerPhone: '+15550123',
      direction: 'inbound',
      dialect: 'twilio',
      rate,
      audio: generateTone(440, rate, rate * 3, 0.5),
      keepReceived: true,
    });
    const done = twilio.run();
    const bot = await rig.bot!.waitConnection();
    const consult = await useTool(bot, 't1', 'consult', { number: '4915100000009' });
    expect(consult).toMatchObject({
      error: 'unsupported_for_dialect',
      message: expect.stringMatching(/twilio/),
    });
    const dtmf = await useTool(bot, 't2', 'send_dtmf', { digits: '5' });
    expect(dtmf).toMatchObject({
      error: 'unsupported_for_dialect',
      message: expect.stringMatching(/twilio/),
    });
    // The call goes on: the caller hears its echo to the end, and hangs up itself.
    const report = await done;
    expect(report.state).toBe('ended');
    expect(report.secondsReceived).toBeGreaterThan(2.5);
  });
});
