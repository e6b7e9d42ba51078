/**
 * A bare `ws` echo server: every frame back as it came. It gives the transport's own limit on this
 * machine, to set beside the bridge's in the same run. `/metrics` reports its CPU and RSS in the
 * bridge's Prometheus names so the load generator reads both the same way.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export interface EchoServer {
  readonly url: string;
  close(): Promise<void>;
}

export function processMetricsText(): string {
  const cpu = process.cpuUsage();
  return (
    `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}\n` +
    `process_resident_memory_bytes ${process.memoryUsage.rss()}\n`
  );
}

export async function startEchoServer(port = 0, host = '127.0.0.1'): Promise<EchoServer> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics') res.end(processMetricsText());
    else res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, maxPayload: 64 * 1024, perMessageDeflate: false });
  wss.on('connection', (ws) => {
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const addr = server.address() as AddressInfo;
  return {
    url: `ws://${host}:${addr.port}/v1/media`,
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
