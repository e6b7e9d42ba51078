/**
 * The provider's messaging APIs as types: chat templates, messages and campaigns
 * and RCS templates and campaigns, with the webhook events both
 * post. Where a document says "not shown", the shape here is ours and says so with *(ours)*.
 */

// ---------------------------------------------------------------------------------------------------
// Chat templates

export const TEMPLATE_CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'] as const;
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number];

export const TEMPLATE_STATUSES = ['PENDING', 'APPROVED', 'REJECTED'] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];

export interface HeaderComponent {
  readonly type: 'HEADER';
  readonly format: 'TEXT';
  readonly text: string;
}
export interface BodyComponent {
  readonly type: 'BODY';
  readonly text: string;
}
export interface FooterComponent {
  readonly type: 'FOOTER';
  readonly text: string;
}
export type TemplateButton =
  | { readonly type: 'URL'; readonly text: string; readonly url: string }
  | { readonly type: 'PHONE_NUMBER'; readonly text: string; readonly phone_number: string }
  | { readonly type: 'QUICK_REPLY'; readonly text: string };
export interface ButtonsComponent {
  readonly type: 'BUTTONS';
  readonly buttons: readonly TemplateButton[];
}
export type TemplateComponent = HeaderComponent | BodyComponent | FooterComponent | ButtonsComponent;

/** `templateData` of a create. */
export interface ChatTemplateInput {
  readonly name: string;
  readonly category: TemplateCategory;
  /** Locale, e.g. `en_US`; a bare `en` is refused. */
  readonly language: string;
  readonly components: readonly TemplateComponent[];
  /** Variable number ("1", "2", ...) to a sample value; required when the text holds variables. */
  readonly sample_values?: Readonly<Record<string, string>>;
  readonly include_optout?: boolean;
  readonly optout_message?: string;
}

/** What a create answers in `template`. */
export interface ChatTemplate {
  readonly id: string;
  readonly template_name: string;
  readonly status: TemplateStatus;
  readonly category: TemplateCategory;
  readonly language: string;
  /** ISO 8601 UTC, with or without milliseconds. */
  readonly created_at: string;
}

/** What get_status answers in `template`. */
export interface ChatTemplateStatus {
  readonly id: string;
  readonly template_name: string;
  readonly status: TemplateStatus;
  readonly rejection_reason: string | null;
  readonly quality_score: string;
}

/** An entry of `GET /chat_templates`: "Fields of each entry in the array: not shown", so any JSON value. */
export type ChatTemplateEntry = unknown;

export interface ChatTemplateFilter {
  readonly status?: TemplateStatus;
  readonly category?: TemplateCategory;
}

// ---------------------------------------------------------------------------------------------------
// Chat messages

export interface InteractiveButton {
  readonly type: 'reply';
  readonly reply: { readonly id: string; readonly title: string };
}

/**
 * `message` of a single send: the four types chat.md lists for `/chat_message_sender`, all free-form
 * (within 24 hours of the customer's last message). A template goes to one number as a campaign of one
 * (`CallTemplate`), never through the sender: the document shows no template type there.
 */
export type ChatMessage =
  | { readonly type: 'text'; readonly text: { readonly body: string } }
  | {
      readonly type: 'image';
      readonly image: { readonly link: string; readonly caption?: string };
    }
  | {
      readonly type: 'document';
      readonly document: { readonly link: string; readonly filename?: string; readonly caption?: string };
    }
  | {
      readonly type: 'interactive';
      readonly interactive: {
        readonly type: 'button';
        readonly body: { readonly text: string };
        readonly action: { readonly buttons: readonly InteractiveButton[] };
      };
    };

/**
 * An approved template for one number (ours: the route's `template`): sent through the campaign creator
 * with one audience row, its `BODY_1`..`BODY_n` the body variables in order.
 */
export interface CallTemplate {
  readonly name: string;
  /** Checked as a locale when given; the campaign creator sends the template in its own language. */
  readonly language?: string;
  readonly body_params?: readonly string[];
}

export type ChatMessageType = ChatMessage['type'];

export interface ChatSendRequest {
  /** Country code and number, digits only. */
  readonly to: string;
  readonly message: ChatMessage;
  readonly account_id?: string;
}

export const MESSAGE_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * The sender's answer. chat.md shows it for a text send; for the other types only `data.message_id` is
 * relied on, the rest may be absent.
 */
export interface ChatSendResult {
  readonly success?: boolean;
  readonly data: { readonly message_id: string; readonly wa_id?: string; readonly status?: MessageStatus };
  readonly performance?: { readonly total_time_ms: number };
}

// ---------------------------------------------------------------------------------------------------
// Chat campaigns

/** A recipient: `phone`, and `BODY_1`..`BODY_n` for the template's body variables. */
export interface AudienceRow {
  readonly phone: string;
  readonly [bodyVariable: `BODY_${number}`]: string;
}

export interface ChatCampaignRequest {
  readonly campaign_name: string;
  readonly template_name: string;
  readonly audience_rows: readonly AudienceRow[];
}

export interface ChatCampaign {
  readonly id: string;
  readonly campaign_name?: string;
  readonly template_name?: string;
  /** `launched` (documented). A 207's campaign is only sure to hold `id`: the rest may be absent. */
  readonly status?: string;
  readonly total_recipients?: number;
  readonly queued_at?: string;
}

/** The campaign creator's answer, with whether it launched (false on HTTP 207: retry with `campaign.id`). */
export interface ChatCampaignResult {
  readonly launched: boolean;
  readonly campaign: ChatCampaign;
}

// ---------------------------------------------------------------------------------------------------
// RCS

export const RCS_TEMPLATE_TYPES = ['text', 'standalone', 'carousel'] as const;
export type RcsTemplateType = (typeof RCS_TEMPLATE_TYPES)[number];

export interface RcsSuggestion {
  readonly type: 'reply' | 'url' | 'phone';
  readonly label: string;
  /** Required for `reply`: returned to the webhook on tap. */
  readonly postback?: string;
  /** Required for `url`. */
  readonly url?: string;
  /** Required for `phone`, E.164. */
  readonly phone?: string;
}

interface RcsTemplateCommon {
  readonly action: 'create_template';
  /** Unique, short, no spaces. */
  readonly template_name: string;
  readonly bot_name: string;
}
export interface RcsTextTemplate extends RcsTemplateCommon {
  readonly template_type: 'text';
  readonly text: string;
  readonly suggestions?: readonly RcsSuggestion[];
}
export interface RcsStandaloneTemplate extends RcsTemplateCommon {
  readonly template_type: 'standalone';
  readonly title: string;
  readonly description?: string;
  readonly media_url?: string;
  readonly orientation?: 'VERTICAL' | 'HORIZONTAL';
  readonly media_height?: 'SHORT_HEIGHT' | 'MEDIUM_HEIGHT' | 'TALL_HEIGHT';
  readonly suggestions?: readonly RcsSuggestion[];
}
export interface RcsCard {
  readonly title: string;
  readonly description?: string;
  readonly media_url?: string;
  readonly suggestions?: readonly RcsSuggestion[];
}
export interface RcsCarouselTemplate extends RcsTemplateCommon {
  readonly template_type: 'carousel';
  readonly card_width?: 'SMALL' | 'MEDIUM';
  /** 2 to 10. */
  readonly cards: readonly RcsCard[];
}
export type RcsTemplate = RcsTextTemplate | RcsStandaloneTemplate | RcsCarouselTemplate;

/**
 * What a create tells: the template that was created. rcs.md: "Response 200 means the template was
 * created. Body shape of the creation response: not shown", so this is the request's, not the answer's.
 */
export interface RcsTemplateCreated {
  readonly template: {
    readonly template_name: string;
    readonly template_type: RcsTemplateType;
    readonly bot_name: string;
  };
}

export interface RcsContact {
  /** 10 digits. */
  readonly mobile: string;
  /** `{{variable}}` name to value. */
  readonly params?: Readonly<Record<string, string>>;
}

export interface RcsCampaignRequest {
  readonly template_name: string;
  readonly campaign_name: string;
  readonly contacts: readonly RcsContact[];
}

export interface RcsCampaignResult {
  readonly status: string;
  readonly campaign_id: string;
  readonly messages_queued: number;
}

// ---------------------------------------------------------------------------------------------------
// Webhook events, as posted to the integrator

/** rcs.md `delivery_status`. */
export interface RcsDeliveryStatusEvent {
  readonly event_type: 'delivery_status';
  readonly timestamp: string;
  readonly message_id: string;
  readonly bot_id: string;
  readonly recipient: string;
  readonly status: MessageStatus;
  readonly status_details?: { readonly sent_at?: string; readonly delivered_at?: string };
  readonly error?: { readonly code: string; readonly message: string };
}

/** rcs.md `button_click`. */
export interface RcsButtonClickEvent {
  readonly event_type: 'button_click';
  readonly timestamp: string;
  readonly message_id: string;
  readonly bot_id: string;
  readonly user_phone: string;
  /** The field that does not apply to the tap (`url` on a postback, `postback_data` on a URL) may be null or absent. */
  readonly interaction: {
    readonly type: 'action' | 'url' | 'phone';
    readonly button_text: string;
    readonly postback_data?: string | null;
    readonly url?: string | null;
  };
}

/**
 * A chat webhook post *(ours: chat.md does not show the payload)*, in the nested form chat networks of
 * this kind use: statuses and inbound messages (a tapped reply button is an inbound `interactive`
 * message whose `context.id` is the message that carried the button).
 */
export interface ChatWebhookPayload {
  readonly object: 'chat';
  readonly entry: readonly {
    readonly changes: readonly {
      readonly field: 'messages';
      readonly value: {
        readonly statuses?: readonly ChatStatusItem[];
        readonly messages?: readonly ChatInboundItem[];
      };
    }[];
  }[];
}

export interface ChatStatusItem {
  /** The message id the sender answered with. */
  readonly id: string;
  readonly status: MessageStatus;
  /** ISO 8601 UTC. */
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
  /** A template's QUICK_REPLY button: its text as payload. */
  readonly button?: { readonly payload: string; readonly text: string };
  /** The message that carried the tapped button. */
  readonly context?: { readonly id: string };
}

/** One webhook event as the bridge stores and forwards it, whichever API posted it. */
export type MessagingEvent =
  | {
      readonly kind: 'status';
      readonly channel: 'chat' | 'rcs';
      readonly message_id: string;
      readonly status: MessageStatus;
      readonly recipient: string;
      readonly timestamp: string;
      readonly error?: { readonly code: string; readonly message: string };
    }
  | {
      readonly kind: 'button';
      readonly channel: 'chat' | 'rcs';
      readonly message_id: string;
      /** The number that tapped. */
      readonly from: string;
      readonly timestamp: string;
      /** The reply id (chat) or `postback_data` (RCS): what application logic keys on. */
      readonly button_id: string;
      readonly button_text: string;
      readonly url?: string;
    };

// ---------------------------------------------------------------------------------------------------
// Error answers

/**
 * The body of a provider error: `error` (a message), and `error_data.code` when the messaging network
 * rejected a message (130429, 131047, ...). `success: false` is ours.
 */
export interface MessagingErrorBody {
  readonly success: false;
  readonly error: string;
  readonly error_data?: { readonly code: number; readonly message?: string };
}

/** Network error codes of chat.md. */
export const NETWORK_ERRORS = {
  rateLimitHit: 130429,
  reEngagementRequired: 131047,
  undeliverable: 131026,
  mediaTypeMismatch: 131053,
  rateLimitExceeded: 133000,
  invalidParameter: 100,
} as const;

// ---------------------------------------------------------------------------------------------------
// The client the bridge uses (client.ts)

export interface MessagingClient {
  listChatTemplates(filter?: ChatTemplateFilter): Promise<{ templates: ChatTemplateEntry[]; count: number }>;
  createChatTemplate(input: ChatTemplateInput): Promise<ChatTemplate>;
  getChatTemplateStatus(templateName: string): Promise<ChatTemplateStatus>;
  syncChatTemplates(): Promise<void>;
  deleteChatTemplate(templateName: string): Promise<void>;
  sendChatMessage(request: ChatSendRequest): Promise<ChatSendResult>;
  createChatCampaign(request: ChatCampaignRequest): Promise<ChatCampaignResult>;
  /** Retries the launch of a campaign saved with its launch failed (HTTP 207) *(ours)*. */
  launchChatCampaign(campaignId: string): Promise<ChatCampaignResult>;
  createRcsTemplate(template: RcsTemplate): Promise<RcsTemplateCreated>;
  launchRcsCampaign(request: RcsCampaignRequest): Promise<RcsCampaignResult>;
  close(): Promise<void>;
}
