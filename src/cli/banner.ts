/**
 * What `npm start` prints for a person at start-up: where to point a provider, and how to get a token.
 */

import { botWhere } from '../config/bot-settings.js';
import type { Config } from '../config.js';
import { displayUrl } from '../log.js';

/** Where messages go, and the webhook URL to give the provider (never the secret itself). */
function messagingLines(http: string, config: Config): string[] {
  if (config.messagingBaseUrl === undefined) {
    return ['  messaging: not configured (MESSAGING_BASE_URL): the message routes answer 503'];
  }
  const hook = `${http}/v1/webhooks/messaging`;
  return [
    `  messaging: ${displayUrl(config.messagingBaseUrl)}`,
    config.messagingWebhookSecret === undefined
      ? `    webhook: ${hook} (no token: MESSAGING_WEBHOOK_SECRET is not set, development only)`
      : `    webhook: ${hook} with "Authorization: Bearer <MESSAGING_WEBHOOK_SECRET>" or ?token=<MESSAGING_WEBHOOK_SECRET>`,
  ];
}

/** `http://0.0.0.0:8080` listens everywhere; a person connects to loopback. */
export function connectableUrl(listenUrl: string): string {
  const u = new URL(listenUrl);
  if (u.hostname === '0.0.0.0' || u.hostname === '[::]') u.hostname = '127.0.0.1';
  return u.origin;
}

/**
 * `consoleToken`: a development REST token for the console's sign-in link, given outside production only
 * (main.ts mints it); without one the console's address is printed bare, and in production not at all.
 */
export function startupBanner(
  listenUrl: string,
  config: Config,
  { consoleToken, audioSocketUrl }: { consoleToken?: string; audioSocketUrl?: string | undefined } = {},
): string {
  const http = connectableUrl(listenUrl);
  const media = `${http.replace(/^http/, 'ws')}/v1/media`;
  const lines = [
    `voicebridge listening on ${listenUrl}`,
    `  media endpoint (a tenant's media_ws_url): ${media}`,
  ];
  if (config.mediaAuth === 'none') {
    lines.push('  media auth: none (MEDIA_AUTH=none, development only): no token needed');
  } else {
    lines.push(
      `  media token${config.mediaSecretIsDev ? ' (development secret)' : ''}: npm run token -- --media`,
      `    then connect with "Authorization: Bearer <token>" or ${media}?token=<token>`,
    );
  }
  if (audioSocketUrl !== undefined) {
    const allow = config.audioSocket.allow;
    lines.push(
      `  AudioSocket listener (Asterisk, tenant ${config.audioSocket.tenant}): ${audioSocketUrl}`,
      allow.length === 0
        ? '    AUDIOSOCKET_ALLOW is empty: every connection is refused until the PBX address is listed'
        : `    taking connections from ${allow.join(', ')}`,
    );
  }
  lines.push(
    `  REST token${config.authSecretIsDev ? ' (development secret)' : ''}: npm run token`,
    // The dialect and where the bot is: never BOT_API_KEY, nor the URL's credentials or query.
    `  bot: ${botWhere(config.bot)} at ${config.botSampleRate} Hz, dialect ${config.bot.dialect}; DSP workers: ${config.dspWorkers}`,
    ...messagingLines(http, config),
  );
  if (!config.production) {
    lines.push(
      consoleToken === undefined
        ? `  console: ${http}/console (sign in with a REST token)`
        : `  console: ${http}/console#token=${consoleToken}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
