#!/usr/bin/env node
/**
 * `npm start`: the bridge with embedded defaults.
 */
import { createBridge } from '../app.js';
import { mintToken } from '../auth/jwt.js';
import { ALL_SCOPES } from '../auth/scopes.js';
import { type Config, ConfigError, loadConfig } from '../config.js';
import type { InProcessProvider } from '../emulator/in-process.js';
import { createFormattedLogger } from '../log.js';
import { connectableUrl, startupBanner } from './banner.js';

/**
 * Outside production, a REST token with every scope for the console's sign-in link (12 hours, the
 * bridge's own HS256 secret); none in production, nor when tokens come from a JWKS the bridge cannot sign for.
 */
async function consoleToken(config: Config): Promise<string | undefined> {
  if (config.production || config.authJwtSecret === undefined) return undefined;
  return mintToken({
    secret: config.authJwtSecret,
    scopes: ALL_SCOPES,
    ttlSeconds: 12 * 3600,
    subject: 'console-dev',
  });
}

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
  const log = await createFormattedLogger(config.logLevel, config.logFormat);
  // Without a provider, the emulator stands in for it (development only), taking call control for the
  // calls this bridge holds; `bridge` is bound once it exists.
  let inProcess: InProcessProvider | undefined;
  let bridgeRef: Awaited<ReturnType<typeof createBridge>> | undefined;
  // Messaging likewise, outside production (where an unset MESSAGING_BASE_URL means no messaging).
  if (config.providerBaseUrl === undefined || (config.messagingBaseUrl === undefined && !config.production)) {
    // Imported on this path only: a production start never loads src/emulator/.
    const { startInProcessProvider } = await import('../emulator/in-process.js');
    inProcess = await startInProcessProvider(config, log, async (tenant, id) =>
      bridgeRef?.ctx.sessions.get(tenant, id),
    );
    config = inProcess.config;
    for (const notice of inProcess.notices) log.warn({ emulator: inProcess.url }, notice);
  }
  const bridge = await createBridge(config, { log });
  bridgeRef = bridge;
  const url = await bridge.listen();
  log.info({ url }, 'voicebridge listening');
  // The emulator's messaging webhooks come to this bridge, with its webhook secret when one is set.
  inProcess?.connectWebhooks(connectableUrl(url));
  process.stdout.write(
    startupBanner(url, config, {
      consoleToken: await consoleToken(config),
      audioSocketUrl: bridge.audioSocketUrl,
    }),
  );
  if (inProcess !== undefined) {
    process.stdout.write(
      `  provider: ${inProcess.notices.join('\n  provider: ')}\n    emulator at ${inProcess.url} (POST /emulator/calls places synthetic calls${inProcess.messaging ? ', /emulator/messaging/ drives messaging' : ''}${inProcess.secretIsBridgeSecret ? '; tokens from npm run token work there' : ''})\n`,
    );
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    bridge
      .close()
      .then(() => inProcess?.emulator.close())
      .then(
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
