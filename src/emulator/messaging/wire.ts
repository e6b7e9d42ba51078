/**
 * The emulator's own reading of chat.md and rcs.md as types: what it takes, keeps and posts. Written
 * from the documents, not shared with the bridge's client (src/messaging/), so that a misreading on
 * either side shows up as a failure between the two.
 */

export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const;
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number];
export const TEMPLATE_STATUSES = ['PENDING', 'APPROVED', 'REJECTED'] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];
export type MessageStatus = 'sent' | 'delivered' | 'read' | 'failed';

/** chat.md, "Messaging network error codes". */
export const NETWORK_ERRORS = {
  rateLimitHit: 130429,
  reEngagementRequired: 131047,
  undeliverable: 131026,
  mediaTypeMismatch: 131053,
  rateLimitExceeded: 133000,
  invalidParameter: 100,
} as const;

export type TemplateButton =
  | { readonly type: 'URL'; readonly text: string; readonly url: string }
  | { readonly type: 'PHONE_NUMBER'; readonly text: string; readonly phone_number: string }
  | { readonly type: 'QUICK_REPLY'; readonly text: string };

export type TemplateComponent =
  | { readonly type: 'HEADER'; readonly format: 'TEXT'; readonly text: string }
  | { readonly type: 'BODY'; readonly text: string }
  | { readonly type: 'FOOTER'; readonly text: string }
  | { readonly type: 'BUTTONS'; readonly buttons: readonly TemplateButton[] };

/** `templateData` as kept. */
export interface ChatTemplateInput {
  readonly name: string;
  readonly category: TemplateCategory;
  readonly language: string;
  readonly components: readonly TemplateComponent[];
}

/**
 * A chat message as the emulator keeps it: a sender's free-form message, or (never on the sender) one
 * recipient's template send of a campaign.
 */
export type ChatMessage =
  | { readonly type: 'text' | 'image' | 'document'; readonly [payload: string]: unknown }
  | {
      readonly type: 'interactive';
      readonly interactive: {
        readonly action: { readonly buttons: readonly { readonly reply: { id: string; title: string } }[] };
      };
    }
  | {
      readonly type: 'template';
      readonly template: { readonly name: string; readonly body_params: string[] };
    };

export interface RcsSuggestion {
  readonly type: 'reply' | 'url' | 'phone';
  readonly label: string;
  readonly postback?: string;
  readonly url?: string;
  readonly phone?: string;
}

export interface RcsCard {
  readonly title: string;
  readonly description?: string;
  readonly media_url?: string;
  readonly suggestions?: readonly RcsSuggestion[];
}

/** An RCS template as kept: its type, bot, texts and suggestions. */
export interface RcsTemplate {
  readonly template_name: string;
  readonly template_type: 'text' | 'standalone' | 'carousel';
  readonly bot_name: string;
  /** text: `text`; standalone: `title`, `description`, `media_url`; carousel: none. */
  readonly texts: readonly string[];
  /** text and standalone types. */
  readonly suggestions?: readonly RcsSuggestion[];
  /** carousel type. */
  readonly cards?: readonly RcsCard[];
}

// ---------------------------------------------------------------------------------------------------
// Webhook posts

/** A chat webhook post (chat.md does not show one: the nested form chat networks of this kind use). */
export interface ChatWebhookPayload {
  readonly object: 'chat';
  readonly entry: readonly {
    readonly changes: readonly {
      readonly field: 'messages';
      readonly value: { readonly statuses?: ChatStatusItem[]; readonly messages?: ChatInboundItem[] };
    }[];
  }[];
}

export interface ChatStatusItem {
  readonly id: string;
  readonly status: MessageStatus;
  readonly timestamp: string;
  readonly recipient_id: string;
  readonly errors?: readonly { readonly code: number; readonly title: string }[];
}

export interface ChatInboundItem {
  readonly id: string;
  readonly from: string;
  readonly timestamp: string;
  readonly type: 'text' | 'interactive' | 'button';
  readonly text?: { readonly body: string };
  readonly interactive?: {
    readonly type: 'button_reply';
    readonly button_reply: { readonly id: string; readonly title: string };
  };
  readonly button?: { readonly payload: string; readonly text: string };
  readonly context?: { readonly id: string };
}

/** rcs.md `delivery_status`. */
export interface RcsDeliveryStatusEvent {
  readonly event_type: 'delivery_status';
  readonly timestamp: string;
  readonly message_id: string;
  readonly bot_id: string;
  readonly recipient: string;
  readonly status: MessageStatus;
  readonly status_details: { readonly sent_at?: string; readonly delivered_at?: string };
  readonly error?: { readonly code: string; readonly message: string };
}

/**
 * rcs.md `button_click`. The interaction lists all four of its documented fields; the one that does
 * not apply to the tap (`url` on a postback, `postback_data` on a URL or call button) is null.
 */
export interface RcsButtonClickEvent {
  readonly event_type: 'button_click';
  readonly timestamp: string;
  readonly message_id: string;
  readonly bot_id: string;
  readonly user_phone: string;
  readonly interaction: {
    readonly type: 'action' | 'url' | 'phone';
    readonly button_text: string;
    readonly postback_data: string | null;
    readonly url: string | null;
  };
}

/** An error answer: `error`, and `error_data.code` when the network refused the message. */
export interface ErrorBody {
  readonly success: false;
  readonly error: string;
  readonly error_data?: { readonly code: number; readonly message?: string };
}
