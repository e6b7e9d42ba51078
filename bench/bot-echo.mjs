#!/usr/bin/env node
/**
 * An echo bot of our own protocol (docs/protocol.md), in a process of its own: plain Node and `ws`, none
 * of the bridge's code. Each binary frame the bridge sends (the caller's audio at BOT_SAMPLE_RATE) goes
 * straight back on the same socket; text events are counted and otherwise ignored. bench/bot-dialects.ts
 * runs it as the `bridge` dialect's bot, beside the stand-ins of the speech-to-speech dialects.
 *
 *   node bench/bot-echo.mjs [--port 0] [--host 127.0.0.1]
 *
 * Prints one JSON line once listening: `{"url": "ws://...", "base": "http://..."}`. `GET /stats` on the
 * same port answers `{connections, open, bytesIn, bytesOut, events}`: audio bytes received and sent back.
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { WebSocketServer } from 'ws';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' } },
});

const stats = { connections: 0, open: 0, bytesIn: 0, bytesOut: 0, events: 0 };

const http = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    const body = JSON.stringify(stats);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  res.writeHead(404).end();
});
const wss = new WebSocketServer({ server: http });
wss.on('connection', (ws) => {
  stats.connections++;
  stats.open++;
  ws.on('message', (data, isBinary) => {
    if (!isBinary) {
      stats.events++;
      return;
    }
    stats.bytesIn += data.length;
    stats.bytesOut += data.length;
    ws.send(data, { binary: true });
  });
  ws.on('close', () => stats.open--);
  ws.on('error', () => {});
});

http.listen(Number(values.port), values.host, () => {
  const { port } = http.address();
  process.stdout.write(
    `${JSON.stringify({ url: `ws://${values.host}:${port}/`, base: `http://${values.host}:${port}` })}\n`,
  );
});
const stop = () => {
  for (const ws of wss.clients) ws.terminate();
  http.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
