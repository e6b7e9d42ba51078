/**
 * A raw WebSocket upgrade request, to read what the bridge answers before the upgrade (status, the
 * contract's error body, headers) where a ws client would only report the status.
 */
import { request } from 'node:http';

/** Sends a WebSocket upgrade request and returns the HTTP answer when it is refused (101: accepted). */
export function upgradeAnswer(
  mediaUrl: string,
  token: string,
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const u = new URL(mediaUrl.replace('ws', 'http'));
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname,
      port: u.port,
      path: `${u.pathname}${u.search}`,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        authorization: `Bearer ${token}`,
        ...extraHeaders,
      },
    });
    req.setTimeout(5_000, () => req.destroy(new Error('upgrade answer timed out')));
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '', headers: res.headers });
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}
