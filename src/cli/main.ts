#!/usr/bin/env node
/**
 * `npm start`: the bridge with embedded defaults.
 */
import { createBridge } from '../app.js';
import { type Config, ConfigError, loadConfig } from '../config.js';
import { startupBanner } from './banner.js';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env, process.argv.slice(2));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`voicebridge: bad configuration:\n${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const bridge = await createBridge(config);
  const url = await bridge.listen();
  const { log } = bridge.ctx;
  log.info({ url }, 'voicebridge listening');
  process.stdout.write(startupBanner(url, config));

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    bridge.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

await main();
