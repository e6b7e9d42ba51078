/**
 * Validation of the chat API's request bodies: templates, single sends and
 * campaigns. Where the document gives a refusal message it is used word for word.
 */
import { describe } from '../errors.js';
import {
  type AudienceRow,
  type BodyComponent,
  type ButtonsComponent,
  type CallTemplate,
  type ChatCampaignRequest,
  type ChatMessage,
  type ChatSendRequest,
  type ChatTemplateInput,
  type FooterComponent,
  type HeaderComponent,
  type InteractiveButton,
  TEMPLATE_CATEGORIES,
  type TemplateButton,
  type TemplateCategory,
  type TemplateComponent,
} from './types.js';

import {
  array,
  body,
  chatPhoneProblem,
  DOCUMENT_EXTENSIONS,
  extension,
  httpUrl,
  IMAGE_EXTENSIONS,
  invalid,
  LIMITS,
  LOCALE,
  MANAGER_ACTIONS,
  MESSAGE_TYPES,
  missing,
  mustBe,
  object,
  oneOf,
  optionalText,
  stringMap,
  TEMPLATE_NAME,
  text,
} from './validate-fields.js';

// ---------------------------------------------------------------------------------------------------
// Chat templates

export type TemplateManagerRequest =
  | { readonly action: 'create'; readonly templateData: ChatTemplateInput }
  | { readonly action: 'get_status'; readonly templateName: string }
  | { readonly action: 'sync' }
  | { readonly action: 'delete'; readonly templateName: string };

/** A `POST /chat_template_manager` body: `action` at the root, a create's template in `templateData`. */
export function parseTemplateManagerRequest(v: unknown): TemplateManagerRequest {
  const b = body(v);
  if (b.action === undefined || b.action === null || b.action === '') missing('action', 'action is required');
  const action = oneOf(b.action, 'action', MANAGER_ACTIONS);
  switch (action) {
    case 'create':
      if (b.templateData === undefined || b.templateData === null) {
        missing('templateData', 'templateData is required');
      }
      return { action, templateData: validateChatTemplateInput(b.templateData) };
    case 'get_status':
    case 'delete':
      return { action, templateName: text(b.templateName, 'templateName') };
    case 'sync':
      return { action };
  }
}

/** The numbers of the `{{n}}` variables of one text, checked: digits only, consecutive from 1. */
function textVariables(s: string, field: string, max: number): number[] {
  const found = new Set<number>();
  for (const m of s.matchAll(/\{\{([^{}]*)\}\}/g)) {
    const inner = m[1] ?? '';
    if (!/^[1-9][0-9]*$/.test(inner)) {
      invalid(field, `${field} holds the variable ${m[0]}: variables are numbered {{1}}, {{2}}, ...`);
    }
    found.add(Number(inner));
  }
  const numbers = [...found].sort((a, b) => a - b);
  if (numbers.length > max) {
    invalid(
      field,
      max === 0
        ? `${field} may not hold variables, got ${numbers.length}`
        : `${field} may hold at most ${max} variable${max === 1 ? '' : 's'}, got ${numbers.length}`,
    );
  }
  numbers.forEach((n, i) => {
    if (n !== i + 1) {
      invalid(
        field,
        `${field} must number its variables consecutively from {{1}}: {{${i + 1}}} is missing before {{${n}}}`,
      );
    }
  });
  return numbers;
}

/** The n of the BODY's `{{1}}`..`{{n}}` (0 without a BODY or variables). */
export function templateBodyVariableCount(components: readonly TemplateComponent[]): number {
  const b = components.find((c): c is BodyComponent => c.type === 'BODY');
  if (b === undefined) return 0;
  let max = 0;
  for (const m of b.text.matchAll(/\{\{([1-9][0-9]*)\}\}/g)) max = Math.max(max, Number(m[1]));
  return max;
}

/** `templateData` of a create (`prefix` names it in messages). */
export function validateChatTemplateInput(v: unknown, prefix = 'templateData'): ChatTemplateInput {
  const t = object(v, prefix);
  if (t.account_id !== undefined) {
    invalid(
      `${prefix}.account_id`,
      `${prefix}.account_id must not be sent: the account is derived from the token`,
    );
  }
  if (t.name === undefined) missing(`${prefix}.name`);
  if (typeof t.name !== 'string' || !TEMPLATE_NAME.test(t.name))
    invalid(`${prefix}.name`, 'Template name invalid');
  const name = t.name;
  const category = oneOf<TemplateCategory>(t.category, `${prefix}.category`, TEMPLATE_CATEGORIES);
  if (t.language === undefined) missing(`${prefix}.language`);
  if (typeof t.language !== 'string' || !LOCALE.test(t.language)) {
    invalid(`${prefix}.language`, 'Language format should be locale-specific');
  }
  const language = t.language;

  const cf = `${prefix}.components`;
  if (t.components === undefined) missing(cf, 'BODY component is required');
  if (!Array.isArray(t.components)) mustBe(cf, 'an array of components', t.components);
  const components: TemplateComponent[] = [];
  const used = new Set<number>();
  const seen = new Map<string, number>();
  t.components.forEach((raw, i) => {
    const f = `${cf}[${i}]`;
    const c = object(raw, f);
    const type = oneOf(c.type, `${f}.type`, ['HEADER', 'BODY', 'FOOTER', 'BUTTONS'] as const);
    const count = (seen.get(type) ?? 0) + 1;
    seen.set(type, count);
    if (count > 1) invalid(`${f}.type`, `${cf} may hold one ${type} component, got a second at [${i}]`);
    switch (type) {
      case 'HEADER': {
        if (c.format !== 'TEXT') mustBe(`${f}.format`, 'TEXT', c.format);
        const s = text(c.text, `${f}.text`, LIMITS.headerChars);
        for (const n of textVariables(s, `${f}.text`, LIMITS.headerVariables)) used.add(n);
        components.push({ type, format: 'TEXT', text: s } satisfies HeaderComponent);
        break;
      }
      case 'BODY': {
        const s = text(c.text, `${f}.text`, LIMITS.bodyChars);
        for (const n of textVariables(s, `${f}.text`, LIMITS.bodyVariables)) used.add(n);
        components.push({ type, text: s } satisfies BodyComponent);
        break;
      }
      case 'FOOTER': {
        const s = text(c.text, `${f}.text`, LIMITS.footerChars);
        textVariables(s, `${f}.text`, 0);
        components.push({ type, text: s } satisfies FooterComponent);
        break;
      }
      case 'BUTTONS': {
        const list = array(c.buttons, `${f}.buttons`, 1, LIMITS.buttonsPerTemplate, 'buttons');
        const buttons = list.map((rb, j) => templateButton(rb, `${f}.buttons[${j}]`, used));
        components.push({ type, buttons } satisfies ButtonsComponent);
        break;
      }
    }
  });
  if (!seen.has('BODY')) invalid(cf, 'BODY component is required');

  let sample_values: Record<string, string> | undefined;
  if (t.sample_values !== undefined) sample_values = stringMap(t.sample_values, `${prefix}.sample_values`);
  if (used.size > 0) {
    const sf = `${prefix}.sample_values`;
    if (sample_values === undefined) {
      missing(sf, `${sf} is required when the text holds variables: a sample for each of ${list(used)}`);
    }
    for (const n of [...used].sort((a, b) => a - b)) {
      const s = sample_values[String(n)];
      if (typeof s !== 'string' || s.trim() === '') {
        invalid(`${sf}.${n}`, `${sf} must give a non-empty sample for {{${n}}} under the key "${n}"`);
      }
    }
  }
  if (t.include_optout !== undefined && typeof t.include_optout !== 'boolean') {
    mustBe(`${prefix}.include_optout`, 'a boolean', t.include_optout);
  }
  const optout_message = optionalText(t.optout_message, `${prefix}.optout_message`);
  return {
    name,
    category,
    language,
    components,
    ...(sample_values === undefined ? {} : { sample_values }),
    ...(t.include_optout === undefined ? {} : { include_optout: t.include_optout as boolean }),
    ...(optout_message === undefined ? {} : { optout_message }),
  };
}

function list(numbers: Set<number>): string {
  return [...numbers]
    .sort((a, b) => a - b)
    .map((n) => `{{${n}}}`)
    .join(', ');
}

function templateButton(v: unknown, f: string, used: Set<number>): TemplateButton {
  const b = object(v, f);
  const type = oneOf(b.type, `${f}.type`, ['URL', 'PHONE_NUMBER', 'QUICK_REPLY'] as const);
  const label = text(b.text, `${f}.text`, LIMITS.buttonTextChars);
  textVariables(label, `${f}.text`, 0);
  switch (type) {
    case 'URL': {
      const url = text(b.url, `${f}.url`);
      // The URL may end in one {{1}}; check the address with a sample in its place.
      for (const n of textVariables(url, `${f}.url`, 1)) used.add(n);
      httpUrl(url.replaceAll('{{1}}', 'x'), `${f}.url`);
      return { type, text: label, url };
    }
    case 'PHONE_NUMBER': {
      const phone = text(b.phone_number, `${f}.phone_number`);
      // The document gives no format; a dialable number with its country code, `+` optional, is ours.
      if (!/^\+?[1-9][0-9]{6,14}$/.test(phone)) {
        mustBe(`${f}.phone_number`, 'a number with its country code (digits, optional leading +)', phone);
      }
      return { type, text: label, phone_number: phone };
    }
    case 'QUICK_REPLY':
      return { type, text: label };
  }
}

// ---------------------------------------------------------------------------------------------------
// Chat messages

/** A chat recipient: country code and number, digits only, of a length the country uses. */
export function validatePhone(v: unknown, field: string): string {
  if (v === undefined || v === null || v === '') missing(field);
  if (typeof v !== 'string') mustBe(field, 'a string of digits with the country code', v);
  const why = chatPhoneProblem(v);
  if (why !== undefined) invalid(field, `${field} ${why}, got ${describe(v)}`);
  return v;
}

export function validateChatSendRequest(v: unknown): ChatSendRequest {
  const b = body(v);
  const to = validatePhone(b.to, 'to');
  const m = object(b.message, 'message');
  const type = oneOf(m.type, 'message.type', MESSAGE_TYPES);
  const pf = `message.${type}`;
  if (m[type] === undefined) {
    missing(pf, `${pf} is required: the payload object is named like message.type`);
  }
  const p = object(m[type], pf);
  let message: ChatMessage;
  switch (type) {
    case 'text':
      message = { type, text: { body: text(p.body, `${pf}.body`, LIMITS.textMessageChars) } };
      break;
    case 'image': {
      const link = httpUrl(p.link, `${pf}.link`);
      if (!(IMAGE_EXTENSIONS as readonly string[]).includes(extension(link.pathname))) {
        mustBe(`${pf}.link`, 'a JPEG or PNG URL (ending .jpg, .jpeg or .png)', p.link);
      }
      const caption = optionalText(p.caption, `${pf}.caption`, LIMITS.captionChars);
      message = {
        type,
        image: { link: p.link as string, ...(caption === undefined ? {} : { caption }) },
      };
      break;
    }
    case 'document': {
      const link = httpUrl(p.link, `${pf}.link`);
      const filename = optionalText(p.filename, `${pf}.filename`);
      // The type is the filename's extension, or the link's when the filename has none.
      const named = filename !== undefined && extension(filename) !== '';
      const ext = extension(named ? filename : link.pathname);
      if (!(DOCUMENT_EXTENSIONS as readonly string[]).includes(ext)) {
        mustBe(
          named ? `${pf}.filename` : `${pf}.link`,
          `a ${DOCUMENT_EXTENSIONS.join(', ')} file`,
          named ? filename : p.link,
        );
      }
      const caption = optionalText(p.caption, `${pf}.caption`, LIMITS.captionChars);
      message = {
        type,
        document: {
          link: p.link as string,
          ...(filename === undefined ? {} : { filename }),
          ...(caption === undefined ? {} : { caption }),
        },
      };
      break;
    }
    case 'interactive': {
      if (p.type !== 'button') mustBe(`${pf}.type`, 'button', p.type);
      const bodyObj = object(p.body, `${pf}.body`);
      const bodyText = text(bodyObj.text, `${pf}.body.text`, LIMITS.interactiveBodyChars);
      const action = object(p.action, `${pf}.action`);
      const raw = array(action.buttons, `${pf}.action.buttons`, 1, LIMITS.interactiveButtons, 'buttons');
      const ids = new Set<string>();
      const buttons = raw.map((rb, i): InteractiveButton => {
        const f = `${pf}.action.buttons[${i}]`;
        const btn = object(rb, f);
        if (btn.type !== 'reply') mustBe(`${f}.type`, 'reply', btn.type);
        const reply = object(btn.reply, `${f}.reply`);
        const id = text(reply.id, `${f}.reply.id`);
        if (ids.has(id)) invalid(`${f}.reply.id`, `${f}.reply.id must be unique, got ${describe(id)} twice`);
        ids.add(id);
        return {
          type: 'reply',
          reply: { id, title: text(reply.title, `${f}.reply.title`, LIMITS.interactiveTitleChars) },
        };
      });
      message = { type, interactive: { type: 'button', body: { text: bodyText }, action: { buttons } } };
      break;
    }
  }
  const account_id = optionalText(b.account_id, 'account_id');
  return { to, message, ...(account_id === undefined ? {} : { account_id }) };
}

/** A route's `template` for one number: an approved template's name, its body values in order. */
export function validateCallTemplate(v: unknown, pf = 'template'): CallTemplate {
  const p = object(v, pf);
  for (const k of Object.keys(p)) {
    if (k !== 'name' && k !== 'language' && k !== 'body_params') {
      invalid(`${pf}.${k}`, `${pf} holds name, language and body_params only; got ${k}`);
    }
  }
  const name = text(p.name, `${pf}.name`);
  if (!TEMPLATE_NAME.test(name)) mustBe(`${pf}.name`, 'lowercase words joined by underscores', name);
  let language: string | undefined;
  if (p.language !== undefined) {
    language = text(p.language, `${pf}.language`);
    if (!LOCALE.test(language)) mustBe(`${pf}.language`, 'a locale like en_US', language);
  }
  let body_params: string[] | undefined;
  if (p.body_params !== undefined) {
    if (!Array.isArray(p.body_params)) mustBe(`${pf}.body_params`, 'an array of strings', p.body_params);
    if (p.body_params.length > LIMITS.bodyVariables) {
      invalid(
        `${pf}.body_params`,
        `${pf}.body_params may hold at most ${LIMITS.bodyVariables} values (a body's variables), got ${p.body_params.length}`,
      );
    }
    body_params = p.body_params.map((s, i) => text(s, `${pf}.body_params[${i}]`));
  }
  return {
    name,
    ...(language === undefined ? {} : { language }),
    ...(body_params === undefined ? {} : { body_params }),
  };
}

/**
 * A template to one number as chat.md defines it: the campaign creator with one audience row, whose
 * `BODY_1`..`BODY_n` are the template's body values in order (the sender takes free-form types only).
 */
export function templateCampaign(
  to: string,
  template: CallTemplate,
  campaignName: string,
): ChatCampaignRequest {
  const row: Record<string, string> = { phone: to };
  template.body_params?.forEach((value, i) => {
    row[`BODY_${i + 1}`] = value;
  });
  return validateChatCampaignRequest({
    campaign_name: campaignName,
    template_name: template.name,
    audience_rows: [row],
  });
}

// ---------------------------------------------------------------------------------------------------
// Chat campaigns

const BODY_KEY = /^BODY_([1-9][0-9]*)$/;

export function validateChatCampaignRequest(v: unknown): ChatCampaignRequest {
  const b = body(v);
  const campaign_name = text(b.campaign_name, 'campaign_name');
  if (!TEMPLATE_NAME.test(campaign_name)) {
    mustBe('campaign_name', 'lowercase words joined by underscores', campaign_name);
  }
  const template_name = text(b.template_name, 'template_name');
  if (b.audience_rows === undefined || (Array.isArray(b.audience_rows) && b.audience_rows.length === 0)) {
    missing('audience_rows', 'audience_rows is required: at least one recipient');
  }
  if (!Array.isArray(b.audience_rows)) mustBe('audience_rows', 'an array of recipients', b.audience_rows);
  let first: number | undefined;
  const audience_rows = b.audience_rows.map((raw, i): AudienceRow => {
    const f = `audience_rows[${i}]`;
    const row = object(raw, f);
    const out: { phone: string; [k: string]: string } = { phone: validatePhone(row.phone, `${f}.phone`) };
    let k = 0;
    for (const [key, value] of Object.entries(row)) {
      if (key === 'phone') continue;
      const m = BODY_KEY.exec(key);
      if (m === null) invalid(`${f}.${key}`, `${f} may hold only phone and BODY_1, BODY_2, ...; got ${key}`);
      out[key] = text(value, `${f}.${key}`);
      k = Math.max(k, Number(m[1]));
    }
    // chat.md: "Numbering starts at BODY_1 and is consecutive"; and one template, so one count for all.
    for (let n = 1; n < k; n++) {
      if (out[`BODY_${n}`] === undefined) {
        invalid(
          `${f}.BODY_${n}`,
          `${f} holds BODY_${k} but not BODY_${n}: the values are numbered BODY_1, BODY_2, ... with no gaps`,
        );
      }
    }
    if (first === undefined) first = k;
    else if (k !== first) {
      invalid(
        `${f}.BODY_${Math.min(k, first) + 1}`,
        `${f} holds ${bodyRange(k)}, but audience_rows[0] holds ${bodyRange(first)}: every row gives the same BODY_n values`,
      );
    }
    return out as AudienceRow;
  });
  return { campaign_name, template_name, audience_rows };
}

function bodyRange(k: number): string {
  return k === 0 ? 'no BODY_n' : k === 1 ? 'BODY_1 only' : `BODY_1 to BODY_${k}`;
}

/** Each row holds BODY_1..BODY_n for the template's n body variables, and no BODY_k beyond. */
export function checkAudienceAgainstTemplate(rows: readonly AudienceRow[], bodyVariableCount: number): void {
  const n = bodyVariableCount;
  rows.forEach((row, i) => {
    for (let k = 1; k <= n; k++) {
      if (row[`BODY_${k}`] === undefined) {
        invalid(
          `audience_rows[${i}].BODY_${k}`,
          `audience_rows[${i}] is missing BODY_${k}: the template's body has ${n} variable${n === 1 ? '' : 's'}, so each row needs BODY_1 to BODY_${n}`,
        );
      }
    }
    for (const k of Object.keys(row)) {
      const m = BODY_KEY.exec(k);
      if (m !== null && Number(m[1]) > n) {
        invalid(
          `audience_rows[${i}].${k}`,
          `audience_rows[${i}] holds ${k}, but the template's body has ${n === 0 ? 'no variables' : `only ${n} variable${n === 1 ? '' : 's'}`}`,
        );
      }
    }
  });
}
