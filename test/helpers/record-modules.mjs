/**
 * Preloaded with `--import` by tests that check which modules a process loads: when the environment
 * names a file in RECORD_MODULES_TO, every module URL the process loads is appended there, one a line,
 * as it is loaded (so the record holds even if the process is killed). The hooks
 * (record-modules-hooks.mjs) run on the loader's thread and send each URL here over a port.
 */
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const target = process.env.RECORD_MODULES_TO;
if (target) {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', (url) => appendFileSync(target, `${url}\n`));
  port1.unref();
  register('./record-modules-hooks.mjs', import.meta.url, { data: { port: port2 }, transferList: [port2] });
}
