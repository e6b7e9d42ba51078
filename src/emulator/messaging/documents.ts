/**
 * What chat.md and rcs.md require of a request, as tables the emulator checks bodies against. Written
 * from the documents alone (never from the bridge's validators in src/messaging/), so a client that
 * misreads a document fails here. Where a document gives a refusal message it is used word for word;
 * where it leaves a rule open ("not shown"), nothing is refused for it. This file holds chat.md's
 * tables and the table checker; documents-rcs.ts holds rcs.md's.
 */
import { badRequest } from './errors.js';
import {
  type ChatTemplateInput,
  NETWORK_ERRORS,
  TEMPLATE_CATEGORIES,
  type TemplateButton,
  type TemplateComponent,
} from './wire.js';

export type Obj = Record<string, unknown>;

/** One field of a document's table. */
export interface Field {
  readonly type: 'string' | 'boolean' | 'object' | 'array';
  readonly required?: boolean;
  readonly pattern?: RegExp;
  readonly oneOf?: readonly string[];
  readonly maxChars?: number;
  /** The document's own refusal for a missing or malformed value. */
  readonly refusal?: string;
}
export type Table = Readonly<Record<string, Field>>;

const NAME = /^[a-z]+(_[a-z]+)*$/;
const LOCALE = /^[a-z]{2,3}_[A-Z]{2}$/;
/** "Country code plus number, digits only": no "+", no spaces, no leading 0 (the country code first). */
const PHONE = /^[1-9][0-9]{7,14}$/;
const PHONE_REFUSAL = 'invalid phone number: country code plus number, digits only (no +, no spaces)';

// ---------------------------------------------------------------------------------------------------
// chat.md tables

const TEMPLATE_INPUT: Table = {
  name: { type: 'string', required: true, pattern: NAME, refusal: 'Template name invalid' },
  category: { type: 'string', required: true, oneOf: TEMPLATE_CATEGORIES },
  language: {
    type: 'string',
    required: true,
    pattern: LOCALE,
    refusal: 'Language format should be locale-specific',
  },
  components: { type: 'array', required: true, refusal: 'BODY component is required' },
  sample_values: { type: 'object' },
  include_optout: { type: 'boolean' },
  optout_message: { type: 'string' },
};

/** The component table: its fields, and the variables and characters its text may hold. */
const COMPONENTS: Readonly<Record<string, { fields: Table; variables: number }>> = {
  HEADER: {
    fields: { format: { type: 'string', required: true, oneOf: ['TEXT'] }, text: text(60) },
    variables: 1,
  },
  BODY: { fields: { text: text(1_024) }, variables: 10 },
  FOOTER: { fields: { text: text(60) }, variables: 0 },
  BUTTONS: { fields: { buttons: { type: 'array', required: true } }, variables: 0 },
};
const MAX_BUTTONS = 3;

const BUTTONS: Readonly<Record<string, Table>> = {
  URL: { text: text(20), url: { type: 'string', required: true } },
  PHONE_NUMBER: { text: text(20), phone_number: { type: 'string', required: true } },
  QUICK_REPLY: { text: text(20) },
};

const SEND: Table = {
  to: { type: 'string', required: true, pattern: PHONE, refusal: PHONE_REFUSAL },
  message: { type: 'object', required: true },
  account_id: { type: 'string' },
};

/** The message types the sender lists, each with its payload's fields. */
const MESSAGE_TYPES: Readonly<Record<string, Table>> = {
  text: { body: text(4_096) },
  image: { link: { type: 'string', required: true }, caption: { type: 'string', maxChars: 1_024 } },
  document: {
    link: { type: 'string', required: true },
    filename: { type: 'string' },
    caption: { type: 'string' },
  },
  interactive: {
    type: { type: 'string', required: true, oneOf: ['button'] },
    body: { type: 'object', required: true },
    action: { type: 'object', required: true },
  },
};
const IMAGE_FORMATS = ['jpg', 'jpeg', 'png'];
const DOCUMENT_FORMATS = ['pdf', 'doc', 'docx', 'xls', 'xlsx', 'ppt', 'pptx'];

const CAMPAIGN: Table = {
  campaign_name: { type: 'string', required: true, pattern: NAME },
  template_name: { type: 'string', required: true },
  audience_rows: { type: 'array', required: true },
};
const BODY_KEY = /^BODY_([1-9][0-9]*)$/;

// ---------------------------------------------------------------------------------------------------
// Checking a body against a table

export function text(maxChars: number): Field {
  return { type: 'string', required: true, maxChars };
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function typeOf(v: unknown): string {
  return Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v;
}

/** Checks `o`'s fields against `table` (fields it does not list are left alone); 400 on the first fault. */
export function check(o: Obj, table: Table, at = ''): void {
  for (const [name, f] of Object.entries(table)) {
    const path = `${at}${name}`;
    const v = o[name];
    if (v === undefined || v === null || v === '') {
      if (f.required) throw badRequest(f.refusal ?? `${path} is required`);
      continue;
    }
    if (typeOf(v) !== f.type) throw badRequest(f.refusal ?? `${path} must be a ${f.type}, got ${typeOf(v)}`);
    if (typeof v !== 'string') continue;
    if (f.pattern !== undefined && !f.pattern.test(v)) throw badRequest(f.refusal ?? `${path} is invalid`);
    if (f.oneOf !== undefined && !f.oneOf.includes(v)) {
      throw badRequest(f.refusal ?? `${path} must be one of ${f.oneOf.join(', ')}`);
    }
    if (f.maxChars !== undefined && v.length > f.maxChars) {
      throw badRequest(`${path} is longer than ${f.maxChars} characters`);
    }
  }
}

export function object(v: unknown, what: string): Obj {
  if (!isObj(v)) throw badRequest(`${what} must be a JSON object`);
  return v;
}

/** The `{{n}}` numbers of a chat text: digits, consecutive from 1, at most `max`. */
function chatVariables(s: string, path: string, max: number): number[] {
  const found = [...s.matchAll(/\{\{([^{}]*)\}\}/g)].map((m) => m[1] ?? '');
  if (found.some((n) => !/^[1-9][0-9]*$/.test(n)))
    throw badRequest(`${path}: variables are {{1}}, {{2}}, ...`);
  const numbers = [...new Set(found.map(Number))].sort((a, b) => a - b);
  if (numbers.length > max) throw badRequest(`${path} may hold at most ${max} variables`);
  if (numbers.some((n, i) => n !== i + 1)) throw badRequest(`${path}: variables are numbered sequentially`);
  return numbers;
}

// ---------------------------------------------------------------------------------------------------
// chat.md

export type TemplateManagerRequest =
  | { readonly action: 'create'; readonly templateData: ChatTemplateInput }
  | { readonly action: 'get_status' | 'delete'; readonly templateName: string }
  | { readonly action: 'sync' };

export function templateManagerRequest(b: Obj): TemplateManagerRequest {
  if (b.action === undefined || b.action === null || b.action === '') throw badRequest('action is required');
  switch (b.action) {
    case 'create':
      if (b.templateData === undefined || b.templateData === null)
        throw badRequest('templateData is required');
      return { action: 'create', templateData: templateInput(object(b.templateData, 'templateData')) };
    case 'get_status':
    case 'delete':
      check(b, { templateName: { type: 'string', required: true } });
      return { action: b.action as 'get_status' | 'delete', templateName: b.templateName as string };
    case 'sync':
      return { action: 'sync' };
    default:
      throw badRequest('action must be one of create, get_status, sync, delete');
  }
}

function templateInput(t: Obj): ChatTemplateInput {
  if (t.account_id !== undefined) throw badRequest('account_id must not be sent in template payloads');
  check(t, TEMPLATE_INPUT);
  const seen = new Set<string>();
  const used = new Set<number>();
  const components = (t.components as unknown[]).map((raw, i): TemplateComponent => {
    const c = object(raw, `components[${i}]`);
    const rules = typeof c.type === 'string' ? COMPONENTS[c.type] : undefined;
    if (rules === undefined)
      throw badRequest(`components[${i}].type must be HEADER, BODY, FOOTER or BUTTONS`);
    if (seen.has(c.type as string)) throw badRequest(`one ${c.type as string} component per template`);
    seen.add(c.type as string);
    check(c, rules.fields, `components[${i}].`);
    if (c.type !== 'BUTTONS') {
      for (const n of chatVariables(c.text as string, `components[${i}].text`, rules.variables)) used.add(n);
      return c.type === 'HEADER'
        ? { type: 'HEADER', format: 'TEXT', text: c.text as string }
        : { type: c.type as 'BODY' | 'FOOTER', text: c.text as string };
    }
    const list = c.buttons as unknown[];
    if (list.length < 1 || list.length > MAX_BUTTONS)
      throw badRequest(`1 to ${MAX_BUTTONS} buttons in total`);
    return {
      type: 'BUTTONS',
      buttons: list.map((b, j) => button(b, `components[${i}].buttons[${j}]`, used)),
    };
  });
  if (!seen.has('BODY')) throw badRequest('BODY component is required');
  if (used.size > 0) {
    const samples = isObj(t.sample_values) ? t.sample_values : {};
    for (const n of used) {
      if (typeof samples[String(n)] !== 'string')
        throw badRequest(`sample_values needs a sample for {{${n}}}`);
    }
  }
  return {
    name: t.name as string,
    category: t.category as ChatTemplateInput['category'],
    language: t.language as string,
    components,
  };
}

function button(raw: unknown, at: string, used: Set<number>): TemplateButton {
  const b = object(raw, at);
  const rules = typeof b.type === 'string' ? BUTTONS[b.type] : undefined;
  if (rules === undefined) throw badRequest(`${at}.type must be URL, PHONE_NUMBER or QUICK_REPLY`);
  check(b, rules, `${at}.`);
  const label = b.text as string;
  if (b.type === 'URL') {
    for (const n of chatVariables(b.url as string, `${at}.url`, 1)) used.add(n);
    return { type: 'URL', text: label, url: b.url as string };
  }
  return b.type === 'PHONE_NUMBER'
    ? { type: 'PHONE_NUMBER', text: label, phone_number: b.phone_number as string }
    : { type: 'QUICK_REPLY', text: label };
}

/** The n of the BODY's `{{1}}`..`{{n}}`. */
export function bodyVariables(components: readonly TemplateComponent[]): number {
  const body = components.find((c) => c.type === 'BODY');
  return body === undefined ? 0 : chatVariables(body.text, 'BODY', 10).length;
}

export interface SendRequest {
  readonly to: string;
  readonly message: { readonly type: string } & Obj;
}

/**
 * A `/chat_message_sender` body. A `message.type` the document does not list for the sender (text,
 * image, document, interactive) is refused as an invalid parameter (network code 100).
 */
export function sendRequest(b: Obj): SendRequest {
  check(b, SEND);
  const m = b.message as Obj;
  const payload = typeof m.type === 'string' ? MESSAGE_TYPES[m.type] : undefined;
  if (payload === undefined) {
    throw badRequest(
      `Invalid parameter: message.type must be one of ${Object.keys(MESSAGE_TYPES).join(', ')}, got ${JSON.stringify(m.type)}`,
      NETWORK_ERRORS.invalidParameter,
    );
  }
  const type = m.type as string;
  const p = object(m[type], `message.${type}`);
  check(p, payload, `message.${type}.`);
  if (type === 'image' || type === 'document') {
    const name = type === 'document' && typeof p.filename === 'string' ? p.filename : (p.link as string);
    const ext = name.split(/[?#]/)[0]!.split('.').pop()!.toLowerCase();
    if (!(type === 'image' ? IMAGE_FORMATS : DOCUMENT_FORMATS).includes(ext)) {
      throw badRequest('Media type mismatch', NETWORK_ERRORS.mediaTypeMismatch);
    }
  }
  if (type === 'interactive') {
    check(p.body as Obj, { text: { type: 'string', required: true } }, 'message.interactive.body.');
    const buttons = (p.action as Obj).buttons;
    if (!Array.isArray(buttons) || buttons.length < 1 || buttons.length > 3) {
      throw badRequest('message.interactive.action.buttons must hold 1 to 3 buttons');
    }
    buttons.forEach((raw, i) => {
      const at = `message.interactive.action.buttons[${i}]`;
      const btn = object(raw, at);
      check(
        btn,
        {
          type: { type: 'string', required: true, oneOf: ['reply'] },
          reply: { type: 'object', required: true },
        },
        `${at}.`,
      );
      check(btn.reply as Obj, { id: { type: 'string', required: true }, title: text(20) }, `${at}.reply.`);
    });
  }
  return { to: b.to as string, message: { ...m, type } };
}

export interface CampaignRequest {
  readonly campaign_name: string;
  readonly template_name: string;
  readonly rows: readonly { readonly phone: string; readonly body: Readonly<Record<number, string>> }[];
}

/** A `/chat_campaign_creator` body (the BODY_n values are checked against the template by the caller). */
export function campaignRequest(b: Obj): CampaignRequest {
  check(b, CAMPAIGN);
  const list = b.audience_rows as unknown[];
  if (list.length === 0) throw badRequest('audience_rows must hold at least one recipient');
  const rows = list.map((raw, i) => {
    const row = object(raw, `audience_rows[${i}]`);
    check(row, { phone: { type: 'string', required: true, pattern: PHONE, refusal: PHONE_REFUSAL } });
    const body: Record<number, string> = {};
    for (const [k, v] of Object.entries(row)) {
      const n = BODY_KEY.exec(k)?.[1];
      if (n === undefined) continue;
      if (typeof v !== 'string') throw badRequest(`audience_rows[${i}].${k} must be a string`);
      body[Number(n)] = v;
    }
    return { phone: row.phone as string, body };
  });
  return { campaign_name: b.campaign_name as string, template_name: b.template_name as string, rows };
}

/** Each row's BODY_1..BODY_n for the template's n body variables, in order. */
export function bodyValues(r: CampaignRequest, n: number): string[][] {
  r.rows.forEach((row, i) => {
    // BODY_n is "the value for the n-th body variable": one the template does not have is invalid.
    const beyond = Object.keys(row.body).find((k) => Number(k) > n);
    if (beyond !== undefined) {
      throw badRequest(`audience_rows[${i}].BODY_${beyond}: the template's body has ${n} variables`);
    }
  });
  return r.rows.map((row, i) =>
    Array.from({ length: n }, (_v, k) => {
      const value = row.body[k + 1];
      if (value === undefined)
        throw badRequest(`audience_rows[${i}].BODY_${k + 1} is required: the template has {{${k + 1}}}`);
      return value;
    }),
  );
}
