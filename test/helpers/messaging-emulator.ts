/**
 * The provider emulator's messaging APIs for the emulator's own tests: one emulator and one webhook
 * receiver a test, on 127.0.0.1 port 0, closed after each test.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, expect } from 'vitest';
import type { MessagingOptions } from '../../src/emulator/messaging/emulator.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import { call } from './http-call.js';

export interface MessagingEmulatorSlot {
  /** The test's emulator, once started (a test that closes it itself may empty the slot). */
  emu: Emulator | undefined;
  /** The test's webhook receiver, once listening. */
  receiver: FastifyInstance | undefined;
  /** Starts the test's emulator with the file's messaging settings and `messaging` over them. */
  start(messaging?: MessagingOptions): Promise<{ url: string; key: string }>;
  /** Makes `app` the test's receiver, listening on 127.0.0.1; the URL of its `path`. */
  listen(app: FastifyInstance, path: string): Promise<string>;
  /** Creates a chat template (`templateData` as chat_template_manager takes it) and approves it. */
  approvedChatTemplate(
    url: string,
    key: string,
    templateData: { name: string; [k: string]: unknown },
  ): Promise<void>;
}

/**
 * Registers an afterEach that closes the test's emulator, then its receiver, and empties the slot.
 * `defaults`: the messaging settings of every emulator the file starts.
 */
export function useMessagingEmulator(
  jwtSecret: string,
  defaults: MessagingOptions = {},
): MessagingEmulatorSlot {
  const slot: MessagingEmulatorSlot = {
    emu: undefined,
    receiver: undefined,
    async start(messaging = {}) {
      const emu = await createEmulator({
        jwtSecret,
        log: createLogger('silent'),
        messaging: { ...defaults, ...messaging },
      });
      slot.emu = emu;
      return { url: await emu.listen(0), key: emu.messaging.defaultApiKey };
    },
    async listen(app, path) {
      slot.receiver = app;
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as { port: number };
      return `http://127.0.0.1:${port}${path}`;
    },
    async approvedChatTemplate(url, key, templateData) {
      const r = await call(url, 'POST', '/v1/chat_template_manager', {
        token: key,
        body: { action: 'create', templateData },
      });
      expect(r.status).toBe(200);
      slot.emu!.messaging.review('default', templateData.name, 'APPROVED');
    },
  };
  afterEach(async () => {
    await slot.emu?.close();
    await slot.receiver?.close();
    slot.emu = undefined;
    slot.receiver = undefined;
  });
  return slot;
}
