/**
 * What the documents leave open in a webhook post, read as a provider could send it: rcs.md lists
 * `postback_data` and `url` on every tap (the one that does not apply may be null or absent), `error`
 * only "when status is failed" (null otherwise, or absent), and fields it does not list may be there.
 */
import { describe, expect, it } from 'vitest';
import { parseWebhook } from '../../src/messaging/webhook-payload.js';

const at = '2026-11-24T10:00:00Z';
const tap = (interaction: Record<string, unknown>) => ({
  event_type: 'button_click',
  timestamp: at,
  message_id: 'rcs.1',
  bot_id: 'bot-1',
  user_phone: '9876543210',
  interaction,
});

describe('webhook payloads: what the documents leave open', () => {
  it('an RCS postback tap with url null, or absent, is taken keyed on postback_data', () => {
    for (const extra of [{ url: null }, {}]) {
      const post = parseWebhook(
        tap({ type: 'action', button_text: 'Track', postback_data: 'track', ...extra }),
      );
      expect(post.rejected).toBe(0);
      expect(post.events).toEqual([
        {
          kind: 'button',
          channel: 'rcs',
          message_id: 'rcs.1',
          from: '9876543210',
          timestamp: at,
          button_id: 'track',
          button_text: 'Track',
        },
      ]);
    }
  });

  it('an RCS URL tap with postback_data null, or absent, is taken with its url, keyed on the button text', () => {
    for (const extra of [{ postback_data: null }, {}]) {
      const post = parseWebhook(
        tap({ type: 'url', button_text: 'Open', url: 'https://shop.example/1', ...extra }),
      );
      expect(post.rejected).toBe(0);
      expect(post.events[0]).toMatchObject({ button_id: 'Open', url: 'https://shop.example/1' });
    }
    // A call button: neither applies.
    const call = parseWebhook(tap({ type: 'phone', button_text: 'Call', postback_data: null, url: null }));
    expect(call.events[0]).toMatchObject({ button_id: 'Call' });
    expect(call.events[0]).not.toHaveProperty('url');
  });

  it('a field given with the wrong type is still refused, naming it', () => {
    const post = parseWebhook(tap({ type: 'action', button_text: 'Track', postback_data: 7 }));
    expect(post.events).toEqual([]);
    expect(post.firstRejection?.field).toBe('interaction.postback_data');
  });

  it('delivery_status: error null or absent on a non-failed status; a numeric error code; extra fields', () => {
    const base = {
      event_type: 'delivery_status',
      timestamp: at,
      message_id: 'rcs.2',
      recipient: '9876543210',
      status: 'delivered',
      status_details: null,
      bot_id: null,
      carrier: 'x',
    };
    for (const extra of [{ error: null }, {}]) {
      const post = parseWebhook({ ...base, ...extra });
      expect(post.rejected, JSON.stringify(post.firstRejection)).toBe(0);
      expect(post.events[0]).not.toHaveProperty('error');
    }
    const failed = parseWebhook({ ...base, status: 'failed', error: { code: 17, message: 'unreachable' } });
    expect(failed.events[0]).toMatchObject({ error: { code: '17', message: 'unreachable' } });
  });

  it('chat statuses: errors null is no error', () => {
    const post = parseWebhook({
      object: 'chat',
      entry: [
        {
          changes: [
            {
              field: 'messages',
              value: {
                statuses: [
                  { id: 'w.1', status: 'sent', timestamp: at, recipient_id: '14155550100', errors: null },
                ],
              },
            },
          ],
        },
      ],
    });
    expect(post.rejected).toBe(0);
    expect(post.events[0]).not.toHaveProperty('error');
  });
});
