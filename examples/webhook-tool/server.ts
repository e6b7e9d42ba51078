/**
 * `npm run example:webhook-tool`: a tenant's webhook tool, as small as one can be. It listens on :9292
 * (PORT), checks each call's `X-Voicebridge-Signature` with TOOL_SECRET (the bridge's BOT_TOOL_SECRET,
 * or the tenant's tool_secret), refuses a bad or stale one with 401, and answers `lookup_order` with a
 * made-up order. Plain Node: nothing of the bridge is imported, so the check below is all a receiver in
 * any language has to do.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 9292);
const secret = process.env.TOOL_SECRET ?? 'dev-tool-secret-change-me';
/** How old a call may be, in seconds, before it is taken for a replay. */
const TOLERANCE_S = 300;

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, checked in constant time. */
function signed(header: string | undefined, body: string): boolean {
  const parts = Object.fromEntries(
    (header ?? '').split(',').map((p) => p.trim().split('=') as [string, string]),
  );
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > TOLERANCE_S) return false;
  const want = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  const got = Buffer.from(parts.v1 ?? '', 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', () => {
    const answer = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (!signed(req.headers['x-voicebridge-signature'] as string | undefined, body))
      return answer(401, { error: 'bad signature' });
    const call = JSON.parse(body) as { tool: string; session_id: string; arguments: { order_id?: string } };
    console.log(`webhook-tool: ${call.tool} for call ${call.session_id}`);
    if (call.tool !== 'lookup_order') return answer(404, { error: `no tool ${call.tool}` });
    answer(200, { order_id: call.arguments.order_id, status: 'shipped', eta_days: 2 });
  });
});
server.listen(port, '127.0.0.1', () =>
  console.log(`webhook-tool: listening at http://127.0.0.1:${port}/orders`),
);
process.on('SIGINT', () => server.close(() => process.exit(0)));
