/**
 * Property-based bad input on every REST route (fast-check), messaging's included, over real HTTP on
 * loopback: wrong types, unknown fields, unicode and oversized bodies and path parameters, garbage or
 * missing tokens, odd methods and content types. Every answer is JSON; every error is the contract's body
 * `{"error": <a code from the table>, "message": <text>}` with a status that fits it; the process stays
 * up and a control call beside it keeps its audio. The bridge runs in a process of its own, so the
 * control call's gaps are the bridge's and not the fuzzing client's (which runs here).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { ERRORS } from '../../src/errors.js';
import {
  ALL_SCOPES,
  AUTH_SECRET,
  closedPort,
  EMULATOR_SECRET,
  MEDIA_SECRET,
  restToken,
} from '../control/harness.js';
import { type BridgeWatch, watchBridge } from '../helpers/bridge-process.js';
import { ControlCall } from '../helpers/control-call.js';
import { TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const CODES = new Set(Object.keys(ERRORS));
const STATUSES = new Set([200, 400, 401, 403, 404, 409, 413, 415, 502, 503, 504]);

let rig: ProcessRig;
let control: ControlCall;
/** The live call of tenant "fuzz" the call-control cases act on. */
let held: TestProvider;
/** What the bridge went through while the control call ran. */
let watch: BridgeWatch | undefined;
let good: string;
let cases = 0;

beforeAll(async () => {
  // Providers at a closed port: call control and messaging check their input, then answer 503 at once
  // instead of dialling; the limits are out of the way.
  const nowhere = `http://127.0.0.1:${await closedPort()}/v1`;
  rig = await startRig({
    process: true,
    env: {
      AUTH_JWT_SECRET: AUTH_SECRET,
      // The held call names its tenant in its session_start (development and tests only).
      MEDIA_AUTH: 'none',
      PROVIDER_BASE_URL: nowhere,
      PROVIDER_TOKEN: await mintToken({ secret: EMULATOR_SECRET, scopes: ALL_SCOPES }),
      MESSAGING_BASE_URL: nowhere,
      MESSAGING_TOKEN: 'unused',
      REST_RATE_LIMIT: '1000000',
      REST_AUTH_FAIL_LIMIT: '1000000',
    },
  });
  // REST cases act for tenant "fuzz", so a PUT cannot change the control call's tenant.
  good = await restToken([...ALL_SCOPES, 'messages:read', 'messages:manage'], 'fuzz');
  held = new TestProvider(rig.mediaUrl);
  await held.start('fz-1', { tenant: 'fuzz' });
  await waitFor(
    async () =>
      (await fetch(`${rig.http}/v1/sessions/fz-1`, { headers: { authorization: `Bearer ${good}` } }))
        .status === 200,
    5_000,
    'the held call of tenant fuzz',
  );
  control = await ControlCall.start(
    rig.mediaUrl,
    await mintToken({ secret: MEDIA_SECRET }),
    'rest-fuzz-control',
  );
  watch = watchBridge(rig.process);
});

afterAll(async () => {
  control?.close();
  held?.close();
  await rig?.close();
  console.log(`REST fuzz cases: ${cases}`);
});

const unicode = fc.string({ unit: 'grapheme', maxLength: 40 });
const anyJson = fc.jsonValue({ maxDepth: 4 });
/** A value of any type, often the wrong one for the field it lands in. */
const wrong = fc.oneof(anyJson, unicode, fc.constant(''), fc.integer(), fc.constant(null), fc.array(unicode));

const FIELDS = [
  'media_ws_url',
  'codec',
  'input_sample_rate',
  'output_sample_rate',
  'encoding',
  'chunk_bytes',
  'media_secret',
  'channels',
  'bot_url',
  'calledParty',
  'callerId',
  'action',
  'number',
  // messaging: the session message, the webhook, templates and campaigns
  'channel',
  'template',
  'message',
  'template_name',
  'params',
  'object',
  'entry',
  'event_type',
  'message_id',
  'status',
  'recipient',
  'timestamp',
  'name',
  'category',
  'language',
  'components',
  'campaign_name',
  'audience_rows',
  'contacts',
  'template_type',
  'bot_name',
  'text',
];

/** Bodies: random JSON, the routes' own fields with random values plus unknown fields, or raw text. */
const body = fc.oneof(
  anyJson.map((v) => ({ raw: JSON.stringify(v), type: 'application/json' })),
  fc
    .tuple(fc.dictionary(fc.constantFrom(...FIELDS), wrong), fc.dictionary(unicode, wrong, { maxKeys: 3 }))
    .map(([known, unknown]) => ({ raw: JSON.stringify({ ...unknown, ...known }), type: 'application/json' })),
  fc
    .record({ action: fc.constantFrom('add', 'delete', 'ADD', ''), number: wrong, callerId: wrong })
    .map((v) => ({ raw: JSON.stringify(v), type: 'application/json' })),
  unicode.map((s) => ({ raw: s, type: 'application/json' })),
  unicode.map((s) => ({
    raw: s,
    type: fc.sample(
      fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/xml'),
      1,
    )[0]!,
  })),
  fc
    .integer({ min: 65 * 1024, max: 200 * 1024 })
    .map((n) => ({ raw: JSON.stringify({ pad: 'x'.repeat(n) }), type: 'application/json' })),
  fc.constant(undefined),
);

const id = fc.oneof(
  fc.constant('fz-1'),
  unicode.filter((s) => s.length > 0),
  fc.string({ maxLength: 300 }),
);

const route = fc.oneof(
  fc.tuple(fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH'), fc.constant('/v1/media-stream')),
  fc.tuple(fc.constantFrom('GET', 'POST'), fc.constant('/v1/sessions')),
  fc.tuple(
    fc.constantFrom('GET', 'DELETE'),
    id.map((i) => `/v1/sessions/${encodeURIComponent(i)}`),
  ),
  fc.tuple(
    fc.constantFrom('POST', 'GET'),
    id.map((i) => `/v1/sessions/${encodeURIComponent(i)}/consult`),
  ),
  fc.tuple(
    fc.constantFrom('POST', 'PUT'),
    id.map((i) => `/v1/sessions/${encodeURIComponent(i)}/conference`),
  ),
  fc.tuple(
    fc.constantFrom('POST', 'GET'),
    id.map((i) => `/v1/sessions/${encodeURIComponent(i)}/message`),
  ),
  fc.tuple(
    fc.constantFrom('POST', 'GET'),
    fc.oneof(
      fc.constant('/v1/webhooks/messaging'),
      unicode.map((s) => `/v1/webhooks/messaging?token=${encodeURIComponent(s)}`),
    ),
  ),
  fc.tuple(
    fc.constantFrom('GET', 'DELETE'),
    id.map((i) => `/v1/messages/${encodeURIComponent(i)}`),
  ),
  fc.tuple(
    fc.constantFrom('GET', 'POST', 'DELETE'),
    fc.oneof(
      fc.constantFrom(
        '/v1/messaging/chat/templates',
        '/v1/messaging/chat/templates/sync',
        '/v1/messaging/chat/campaigns',
        '/v1/messaging/rcs/templates',
        '/v1/messaging/rcs/campaigns',
      ),
      unicode.map((s) => `/v1/messaging/chat/templates?status=${encodeURIComponent(s)}&category=${s.length}`),
      id.map((i) => `/v1/messaging/chat/templates/${encodeURIComponent(i)}`),
      id.map((i) => `/v1/messaging/chat/campaigns/${encodeURIComponent(i)}/launch`),
    ),
  ),
  fc.tuple(fc.constantFrom('GET', 'POST'), fc.constantFrom('/healthz', '/readyz', '/metrics')),
  fc.tuple(
    fc.constant('GET'),
    unicode.map((s) => `/v1/${encodeURIComponent(s)}?x=${encodeURIComponent(s)}`),
  ),
);

const auth = fc.oneof(
  { arbitrary: fc.constant('good'), weight: 4 },
  { arbitrary: fc.constant('none'), weight: 1 },
  { arbitrary: unicode.map((s) => `Bearer ${s.replace(/[^\x20-\x7e]/g, 'x')}`), weight: 1 },
  { arbitrary: fc.constant('Basic dXNlcjpwYXNz'), weight: 1 },
);

describe('REST routes, property-based', () => {
  it('every answer to bad input is the contract error body with a fitting status', async () => {
    await fc.assert(
      fc.asyncProperty(route, body, auth, async ([method, path], b, a) => {
        cases++;
        const headers: Record<string, string> = {};
        if (a === 'good') headers.authorization = `Bearer ${good}`;
        else if (a !== 'none') headers.authorization = a;
        const sendBody = b !== undefined && method !== 'GET';
        if (sendBody) headers['content-type'] = b.type;
        const res = await fetch(`${rig.http}${path}`, {
          method,
          headers,
          ...(sendBody ? { body: b.raw } : {}),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await res.text();
        expect(STATUSES.has(res.status), `${method} ${path} -> ${res.status} ${text.slice(0, 200)}`).toBe(
          true,
        );
        if (path === '/metrics' && res.status === 200) return;
        const json = JSON.parse(text) as Record<string, unknown>;
        if (res.status >= 400) {
          expect(Object.keys(json).sort(), text.slice(0, 200)).toEqual(['error', 'message']);
          expect(CODES.has(String(json.error)), String(json.error)).toBe(true);
          expect(typeof json.message).toBe('string');
          expect(
            ERRORS[json.error as keyof typeof ERRORS].status === res.status ||
              res.status === 415 ||
              res.status === 404,
            `${res.status} ${String(json.error)}`,
          ).toBe(true);
        }
      }),
      { numRuns: 2500 },
    );
    // Still up, still serving, and the control call kept its audio through all of it.
    expect((await fetch(`${rig.http}/healthz`)).status).toBe(200);
    const w = control.window(0);
    const r = await control.stop();
    console.log(
      `REST fuzz control call: ${JSON.stringify({ ...r, ...w })}; ${watch?.describe(0, performance.now(), w.worstAt)}`,
    );
    expect(r.receivedSamples).toBeGreaterThanOrEqual(r.sentSamples - 16 * 160);
    expect(r.snrDb).toBeGreaterThan(40);
    // The fuzzing client runs in this process, beside the control call's receiving end, so gaps include
    // its work too: bounded loosely here (a provider's jitter buffer absorbs this); lost audio is bounded
    // strictly above.
    expect(w.p99GapMs).toBeLessThan(70);
    expect(w.maxGapMs).toBeLessThan(300);
  }, 120_000);
});
