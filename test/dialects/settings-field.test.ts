/**
 * The shared `settings` field (src/dialects/bot/speech.ts): a JSON object within bounds of size and
 * nesting, refused otherwise with a message naming the field and what it takes, and shown on reads with
 * the credentials a vendor's settings may carry masked. The registered dialects that list it are held to
 * the rest (env twin, round trip over REST) by bot-conformance.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SETTINGS_MAX_BYTES, SETTINGS_MAX_DEPTH, settings } from '../../src/dialects/bot/speech.js';
import { maskedUrl } from '../../src/log.js';

const check = (v: unknown) => settings.check(v, 'bot.settings', {});

/** An object nested `depth` deep. */
function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

describe('the settings field', () => {
  it('takes a JSON object, its example, an empty one, and one at its bounds', () => {
    expect(check(settings.example)).toBeUndefined();
    expect(check({})).toBeUndefined();
    expect(check(nested(SETTINGS_MAX_DEPTH))).toBeUndefined();
    const big = { p: 'é'.repeat((SETTINGS_MAX_BYTES - '{"p":""}'.length) / 2) };
    expect(Buffer.byteLength(JSON.stringify(big))).toBe(SETTINGS_MAX_BYTES);
    expect(check(big)).toBeUndefined();
  });

  it.each([
    ['a string', '{"agent":{}}'],
    ['an array', [{ agent: {} }]],
    ['a number', 12],
    ['a boolean', true],
  ])('refuses %s, naming the field and what it takes', (kind, value) => {
    const p = check(value);
    expect(p?.field).toBe('bot.settings');
    expect(p?.message).toBe(`bot.settings must be ${settings.accepts}, got ${kind}`);
  });

  it('refuses one too large or too deep, saying by how much, without quoting it', () => {
    // Counted in bytes: 2 bytes a character here.
    const big = { p: 'é'.repeat(SETTINGS_MAX_BYTES / 2) };
    const p = check(big);
    expect(p?.message).toMatch(/^bot\.settings must be a JSON object of at most 16384 bytes as JSON/);
    expect(p?.message).toMatch(/got 16392 bytes$/);
    expect(check({ p: 'secret-ish'.repeat(2000) })?.message.includes('secret-ish')).toBe(false);
    expect(check(nested(SETTINGS_MAX_DEPTH + 1))?.message).toMatch(/got an object nested deeper$/);
    // Deep enough to overflow a recursive walk: refused, not thrown.
    const deep: unknown[] = [];
    let at = deep;
    for (let i = 0; i < 20_000; i++) {
      const inner: unknown[] = [];
      at.push(inner);
      at = inner;
    }
    expect(check({ deep })?.message).toMatch(/nested deeper$/);
  });

  it('is shown on reads with credentials masked and URLs masked, the rest as written', () => {
    const stored = {
      agent: {
        language: 'en',
        think: {
          provider: { type: 'open_ai', model: 'gpt-4o-mini' },
          endpoint: {
            url: 'https://llm.example/v1/chat?key=k-secret-1',
            headers: { 'x-custom': 'h-secret-2' },
          },
          api_key: 'k-secret-3',
        },
        speak: [{ provider: { type: 'deepgram', model: 'aura-2-thalia-en', authToken: 'k-secret-4' } }],
      },
    };
    const shown = settings.shown!(stored, maskedUrl) as typeof stored;
    const text = JSON.stringify(shown);
    for (const s of ['k-secret-1', 'h-secret-2', 'k-secret-3', 'k-secret-4']) expect(text).not.toContain(s);
    expect(shown.agent.think.endpoint.url).toBe('https://llm.example/v1/chat?key=****');
    expect(shown.agent.think.endpoint.headers).toEqual({ 'x-custom': '****' });
    expect(shown.agent.think.provider).toEqual(stored.agent.think.provider);
    expect(shown.agent.language).toBe('en');
    // The stored value is untouched.
    expect(stored.agent.think.api_key).toBe('k-secret-3');
  });

  it('is kept as a frozen copy: a call cannot change what the next one reads', () => {
    const given = { agent: { think: { prompt: 'a' } } };
    const kept = settings.value!(given) as typeof given;
    expect(kept).toEqual(given);
    expect(kept).not.toBe(given);
    expect(Object.isFrozen(kept.agent.think)).toBe(true);
  });
});
