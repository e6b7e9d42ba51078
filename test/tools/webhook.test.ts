/**
 * A webhook tool against a real HTTP server: the call is signed with the tenant's tool_secret and its
 * answer reaches the model as the function_call_output; arguments that do not fit the tool's schema
 * never reach the server; a server that hangs gives the model a timeout output within timeout_ms + 1 s
 * and the call goes on; neither the arguments' values nor the output appear in the bridge's log.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { RealtimeConnection } from '../../src/emulator/realtime/connection.js';
import { verifySignature } from '../../src/tools/signature.js';
import { call } from '../helpers/http-call.js';
import { startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';
import { json, startToolServer } from './helpers.js';

const SECRET = 'tenant-tool-secret-4d1f9a';
const TIMEOUT_MS = 800;
/**
 * Order ids the log must never hold: long and with a hyphen, so no random id in a log line (the call
 * ids are 21 characters of A-Z, a-z, 0-9, _ and -) holds one by chance, as one once held "B2".
 */
const ORDER_A = 'ord-a17x-q4';
const ORDER_B = 'ord-b2zz-k7';
const ORDER_SLOW = 'ord-slow-m3';
const LOOKUP = {
  name: 'lookup_order',
  description: "Looks up an order's status by its id.",
  parameters: {
    type: 'object',
    properties: { order_id: { type: 'string', minLength: 2, maxLength: 16 } },
    required: ['order_id'],
    additionalProperties: false,
  },
  timeout_ms: TIMEOUT_MS,
};

/** The model's next output, once the reply before it (if any) has ended. */
async function callAndWait(conn: RealtimeConnection, args: unknown) {
  await waitFor(
    () => conn.record.responses.every((r) => r.status !== 'in_progress'),
    5_000,
    'the model to be done speaking',
  );
  const n = conn.record.toolOutputs.length;
  const t0 = performance.now();
  const callId = conn.callTool('lookup_order', args);
  await waitFor(() => conn.record.toolOutputs.length > n, 10_000, 'the function_call_output');
  const out = conn.record.toolOutputs[n]!;
  expect(out.call_id).toBe(callId);
  return { callId, ms: performance.now() - t0, output: JSON.parse(out.output) as Record<string, unknown> };
}

describe('webhook tools', () => {
  it('signed POST, output to the model; bad arguments never sent; a hanging server times out and the call goes on', async () => {
    await using server = await startToolServer((req, res) => {
      const args = (JSON.parse(req.body) as { arguments: { order_id: string } }).arguments;
      if (args.order_id === ORDER_SLOW) return; // never answers
      json(res, { order_id: args.order_id, status: 'shipped', eta_days: 2 });
    });
    await using rig = await startRig({ realtime: {}, log: 'debug' });
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: await rig.restToken(['media:manage']),
      body: {
        media_ws_url: 'wss://media.example/v1/media',
        tool_secret: SECRET,
        bot: {
          dialect: 'openai-realtime',
          url: rig.realtime!.wsUrl(),
          api_key: 'sk-tenant-key',
          tools: [{ ...LOOKUP, url: `${server.url}/orders?key=abc` }],
        },
      },
    });
    expect(put.status).toBe(200);
    expect(put.body.tool_secret_hint).toBe('****9a');
    expect(put.text).not.toContain(SECRET);
    expect((put.body.bot as { tools: { url: string }[] }).tools[0]!.url).toBe(
      `${server.url}/orders?key=****`,
    );

    const p = await rig.call('wh-call');
    const conn = await rig.realtime!.waitForSession(1, 10_000);
    await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the model session');

    // 1. The answer reaches the model; the request is signed with the tenant's secret.
    const ok = await callAndWait(conn, { order_id: ORDER_A });
    expect(ok.output).toEqual({ order_id: ORDER_A, status: 'shipped', eta_days: 2 });
    expect(server.requests).toHaveLength(1);
    const seen = server.requests[0]!;
    expect(JSON.parse(seen.body)).toEqual({
      session_id: 'wh-call',
      tenant: 'default',
      tool: 'lookup_order',
      call_id: ok.callId,
      arguments: { order_id: ORDER_A },
    });
    const sig = seen.headers['x-voicebridge-signature'] as string;
    expect(sig).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(sig, seen.body, SECRET)).toBe(true);
    expect(verifySignature(sig, seen.body, `${SECRET}x`)).toBe(false);
    expect(verifySignature(sig, seen.body.replace(ORDER_A, `${ORDER_A}9`), SECRET)).toBe(false);

    // 2. Arguments outside the schema: the model is told, the server never sees them.
    const bad = await callAndWait(conn, { order_id: 17 });
    expect(bad.output.error).toBe('invalid_arguments');
    expect(bad.output.message).toMatch(/order_id must be string/);
    const extra = await callAndWait(conn, { order_id: ORDER_A, card: '4111' });
    expect(extra.output.error).toBe('invalid_arguments');
    expect(server.requests).toHaveLength(1);

    // 3. A server that hangs: a timeout output within timeout_ms + 1 s.
    const slow = await callAndWait(conn, { order_id: ORDER_SLOW });
    expect(slow.output.error).toBe('upstream_timeout');
    expect(slow.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(slow.ms).toBeLessThan(TIMEOUT_MS + 1000);
    // ... and the call goes on: the caller is still connected, the next call of the tool works.
    expect(p.closeCode).toBeUndefined();
    const again = await callAndWait(conn, { order_id: ORDER_B });
    expect(again.output.status).toBe('shipped');

    // Neither the arguments' values nor the output nor the secret is in the log.
    const log = rig.logs.join('\n');
    expect(log).toContain('"tool":"lookup_order"');
    for (const secretish of [ORDER_A, ORDER_B, ORDER_SLOW, 'shipped', 'eta_days', SECRET, 'key=abc'])
      expect(log).not.toContain(secretish);
  });
});
