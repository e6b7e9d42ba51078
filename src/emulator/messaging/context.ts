/**
 * What the messaging routes share: the state, the authenticator, delivery, the fan-out and the settings.
 */
import type { FastifyRequest } from 'fastify';
import type { RestVerifier } from '../../auth/jwt.js';
import { authenticate, type Caller } from './accounts.js';
import type { FanOut } from './campaigns.js';
import type { Delivery } from './delivery.js';
import type { MessagingState } from './state.js';
import type { WebhookPoster } from './webhooks.js';

export interface MessagingSettings {
  /** Delay from create to review; negative: reviewed only by a control call. */
  readonly reviewDelayMs: number;
  readonly reviewOutcome: 'approve' | 'reject';
  readonly deliveryDelayMs: number;
  /** Delay from delivered to read; negative: read receipts off. */
  readonly readDelayMs: number;
  /** Campaign fan-out rate per account. */
  readonly campaignRatePerSecond: number;
  readonly webhookMaxAttempts: number;
  readonly webhookBackoffMs: number;
  readonly webhookConcurrency: number;
}

export const DEFAULT_MESSAGING_SETTINGS: MessagingSettings = Object.freeze({
  reviewDelayMs: 1_000,
  reviewOutcome: 'approve',
  deliveryDelayMs: 100,
  readDelayMs: 200,
  campaignRatePerSecond: 80,
  webhookMaxAttempts: 5,
  webhookBackoffMs: 200,
  webhookConcurrency: 16,
});

export interface MessagingContext {
  readonly state: MessagingState;
  readonly verify: RestVerifier;
  readonly delivery: Delivery;
  readonly fanOut: FanOut;
  readonly hooks: WebhookPoster;
  readonly settings: MessagingSettings;
  /** Review timers, cleared on close. */
  readonly timers: Set<NodeJS.Timeout>;
}

export const callerOf = (ctx: MessagingContext, req: FastifyRequest): Promise<Caller> =>
  authenticate(ctx.state, ctx.verify, req.headers.authorization);
