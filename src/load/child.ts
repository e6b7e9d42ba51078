/**
 * Entry point of the load generator's child processes: `run` runs a share of the calls and reports
 * progress each second; `echo` serves a bare echo server (frames back at once, or `delayMs` later) until
 * told to stop.
 */
import { startEchoServer } from './echo-server.js';
import { LoadRun, type RunOptions } from './runner.js';

type Command = { type: 'run'; options: RunOptions } | { type: 'echo'; delayMs?: number } | { type: 'stop' };

const send = (msg: unknown) => process.send?.(msg);

process.on('message', (msg: Command) => {
  if (msg.type === 'run') {
    const run = new LoadRun(msg.options);
    const timer = setInterval(() => send({ type: 'progress', progress: run.progress() }), 1000);
    run.run().then(
      (result) => {
        clearInterval(timer);
        send({ type: 'result', result });
      },
      (err: unknown) => {
        clearInterval(timer);
        send({ type: 'failed', message: String(err) });
      },
    );
  } else if (msg.type === 'echo') {
    startEchoServer(0, '127.0.0.1', { delayMs: msg.delayMs ?? 0 }).then(
      (echo) => {
        send({ type: 'echo', url: echo.url });
        process.on('message', (m: Command) => {
          if (m.type === 'stop') void echo.close().then(() => process.exit(0));
        });
      },
      (err: unknown) => send({ type: 'failed', message: String(err) }),
    );
  } else if (msg.type === 'stop') {
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
