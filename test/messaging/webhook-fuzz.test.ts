/**
 * `POST /v1/webhooks/messaging` with random bodies and with one field of a good chat or RCS post made
 * wrong: always a 200 or a 400 with the contract body, the field named where the post or the event is
 * refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chatButton,
  chatStatuses,
  postWebhook,
  rcsStatus,
  startWebhookBridge,
  useWebhookRigs,
} from '../helpers/messaging.js';

describe('messaging webhooks: random posts', () => {
  const { open } = useWebhookRigs();

  it('any body is 200 or a 400 with the contract body; a field made wrong is a 400 naming it in the envelope, a rejection naming it in an event', async () => {
    const rig = await startWebhookBridge({ REST_RATE_LIMIT: '1000000' });
    open.push(rig);
    const wrong = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.string({ unit: 'grapheme', maxLength: 30 }),
      fc.constant(null),
      fc.constant(undefined),
      fc.integer(),
    );
    /** Sets `path` (keys and indexes) in a copy of `v` to `value`. */
    const setAt = (v: unknown, path: (string | number)[], value: unknown): unknown => {
      if (path.length === 0) return value;
      const [k, ...rest] = path;
      const copy = (Array.isArray(v) ? [...v] : { ...(v as object) }) as Record<string | number, unknown>;
      copy[k!] = setAt(copy[k!], rest, value);
      return copy;
    };
    /** A path as the bridge names it: `entry[0].changes`, `[0].message_id`. */
    const fieldOf = (path: (string | number)[]) =>
      path.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');
    const chat = chatStatuses('m-fuzz', 'sent');
    const tap = chatButton('m-fuzz', 'b1');
    const rcs = rcsStatus('m-fuzz', 'read');
    // Where a wrong value refuses the post (the envelope), and where it costs one event.
    const envelope: [unknown, (string | number)[]][] = [
      [chat, ['object']],
      [chat, ['entry']],
    ];
    const inside: [unknown, (string | number)[]][] = [
      [chat, ['entry', 0]],
      [chat, ['entry', 0, 'changes']],
      [chat, ['entry', 0, 'changes', 0, 'value']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'status']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'errors']],
      [chat, ['entry', 0, 'changes', 0, 'value', 'statuses', 0, 'id']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'interactive']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'context']],
      [tap, ['entry', 0, 'changes', 0, 'value', 'messages', 0, 'type']],
      [rcs, ['error']],
      [rcs, ['recipient']],
      [rcs, ['event_type']],
      [[rcs], [0, 'message_id']],
    ];
    const GENERIC = /^the webhook post must be a chat payload/;
    /** The post's answer names `field` (or a field inside it) first. */
    const names = (text: unknown, field: string) =>
      typeof text === 'string' &&
      text.startsWith(field) &&
      [' ', '.', '['].includes(text.charAt(field.length));
    const mutated = (paths: [unknown, (string | number)[]][]) =>
      fc.tuple(fc.constantFrom(...paths), wrong).map(([[v, path], value]) => ({
        body: setAt(v, path, value),
        field: fieldOf(path),
        value,
      }));
    const check = (r: { status: number; body: Record<string, unknown> }, what: string) => {
      expect([200, 400], what).toContain(r.status);
      if (r.status === 400) {
        expect(['bad_request', 'invalid_field'], what).toContain(r.body.error);
        expect(typeof r.body.message, what).toBe('string');
        return;
      }
      const keys = Object.keys(r.body).sort();
      if (r.body.rejected === undefined) expect(keys, what).toEqual(['duplicates', 'received']);
      else expect(keys, what).toEqual(['duplicates', 'first_rejection', 'received', 'rejected']);
    };
    /** How often a made-wrong field was refused: a bridge that took everything would pass each case alone. */
    const tally = { envelope: 0, refused: 0, inside: 0, rejected: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue({ maxDepth: 4 }).map((body) => ({ kind: 'any' as const, body })),
          mutated(envelope).map((m) => ({ kind: 'envelope' as const, ...m })),
          mutated(inside).map((m) => ({ kind: 'inside' as const, ...m })),
        ),
        async (c) => {
          const text = JSON.stringify(c.body) ?? 'null';
          const r = await postWebhook(rig.http, text);
          check(r, text);
          if (c.kind === 'any') return;
          // A wrong value may happen to be a right one (or one the bridge skips, as an inbound text):
          // then nothing is refused. Else the refusal names the field.
          if (c.kind === 'envelope') {
            tally.envelope++;
            if (r.status === 200) {
              // Taken only where the value is a right one after all: "chat" as the object, a list as entry.
              const right = c.field === 'object' ? c.value === 'chat' : Array.isArray(c.value);
              expect(right, `${text}: taken with ${c.field} = ${JSON.stringify(c.value)}`).toBe(true);
              return;
            }
            tally.refused++;
            if (c.value === undefined && c.field === 'object') expect(r.body.message, text).toMatch(GENERIC);
            else expect(names(r.body.message, c.field), `${text}: ${r.body.message}`).toBe(true);
            return;
          }
          // Without event_type the post is no RCS event: the envelope is unreadable.
          if (c.field === 'event_type' && c.value === undefined) {
            expect(r.status, text).toBe(400);
            expect(r.body.message, text).toMatch(GENERIC);
            return;
          }
          expect(r.status, text).toBe(200);
          tally.inside++;
          if (r.body.rejected === undefined) return;
          tally.rejected++;
          expect(names(r.body.first_rejection, c.field), `${text}: ${r.body.first_rejection}`).toBe(true);
          // One event in the post: one rejection, unless the wrong value is a list of wrong things.
          if (!Array.isArray(c.value)) expect(r.body.rejected, text).toBe(1);
        },
      ),
      {
        numRuns: 400,
        // Found by a run: a `__proto__` key is dropped as the body is parsed, the event refused, not the post.
        examples: [
          [
            {
              kind: 'inside',
              body: { object: 'chat', entry: [[JSON.parse('{"__proto__":null}')]] },
              field: 'entry[0]',
              value: [JSON.parse('{"__proto__":null}')],
            },
          ],
        ],
      },
    );
    console.info(
      `webhook fuzz: envelope made wrong ${tally.envelope}, refused ${tally.refused}; inside ${tally.inside}, rejected ${tally.rejected}`,
    );
    expect(tally.refused / tally.envelope).toBeGreaterThan(0.8);
    expect(tally.rejected / tally.inside).toBeGreaterThan(0.6);
  });
});
