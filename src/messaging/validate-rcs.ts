/**
 * Validation of the RCS API's request bodies (rcs.md): templates (text, rich card, carousel, with their
 * suggestions), campaign requests, and a campaign's contacts against the template's variables. An error
 * names the field and what the document accepts.
 */
import {
  RCS_TEMPLATE_TYPES,
  type RcsCampaignRequest,
  type RcsCard,
  type RcsContact,
  type RcsSuggestion,
  type RcsTemplate,
} from './types.js';

import {
  array,
  body,
  E164,
  httpUrl,
  invalid,
  isObj,
  LIMITS,
  missing,
  mustBe,
  object,
  oneOf,
  optionalOneOf,
  optionalText,
  RCS_MOBILE,
  stringMap,
  text,
} from './validate-fields.js';

// ---------------------------------------------------------------------------------------------------
// RCS templates

type SuggestionType = RcsSuggestion['type'];

function suggestions(
  v: unknown,
  field: string,
  allowed: readonly SuggestionType[],
  max: number,
): RcsSuggestion[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) mustBe(field, `an array of at most ${max} suggestions`, v);
  if (v.length > max) invalid(field, `${field} may hold at most ${max} suggestions, got ${v.length}`);
  return v.map((raw, i) => suggestion(raw, `${field}[${i}]`, allowed));
}

function suggestion(v: unknown, f: string, allowed: readonly SuggestionType[]): RcsSuggestion {
  const s = object(v, f);
  const type = oneOf(s.type, `${f}.type`, allowed);
  const label = text(s.label, `${f}.label`, LIMITS.rcsLabelChars);
  switch (type) {
    case 'reply':
      return { type, label, postback: text(s.postback, `${f}.postback`) };
    case 'url':
      httpUrl(s.url, `${f}.url`);
      return { type, label, url: s.url as string };
    case 'phone': {
      const phone = text(s.phone, `${f}.phone`);
      if (!E164.test(phone)) mustBe(`${f}.phone`, 'an E.164 number like +14155550100', phone);
      return { type, label, phone };
    }
  }
}

function optionalHttpUrl(v: unknown, field: string): string | undefined {
  if (v === undefined) return undefined;
  httpUrl(v, field);
  return v as string;
}

/** A `POST /rcs_template_manager` body. */
export function validateRcsTemplate(v: unknown): RcsTemplate {
  const b = body(v);
  if (b.action === undefined) missing('action', 'action is required');
  if (b.action !== 'create_template') mustBe('action', 'create_template', b.action);
  const template_name = text(b.template_name, 'template_name', LIMITS.rcsTemplateNameChars);
  if (/\s/.test(template_name)) mustBe('template_name', 'a name without spaces', template_name);
  const template_type = oneOf(b.template_type, 'template_type', RCS_TEMPLATE_TYPES);
  const bot_name = text(b.bot_name, 'bot_name');
  const common = { action: 'create_template', template_name, bot_name } as const;
  switch (template_type) {
    case 'text': {
      // rcs.md lists phone suggestions on text templates but not "the field that carries the number"
      // there: a shape the document does not define is not sent.
      if (Array.isArray(b.suggestions)) {
        b.suggestions.forEach((x, i) => {
          if (isObj(x) && x.type === 'phone') {
            invalid(
              `suggestions[${i}].type`,
              `suggestions[${i}].type phone is not sent on a text template: the provider's document does not show which field carries its number there (a standalone template takes phone suggestions); reply or url`,
            );
          }
        });
      }
      const s = suggestions(b.suggestions, 'suggestions', ['reply', 'url'], LIMITS.rcsSuggestions);
      return {
        ...common,
        template_type,
        text: text(b.text, 'text'),
        ...(s === undefined ? {} : { suggestions: s }),
      };
    }
    case 'standalone': {
      const title = text(b.title, 'title');
      const description = optionalText(b.description, 'description');
      const media_url = optionalHttpUrl(b.media_url, 'media_url');
      const orientation = optionalOneOf(b.orientation, 'orientation', ['VERTICAL', 'HORIZONTAL'] as const);
      const media_height = optionalOneOf(b.media_height, 'media_height', [
        'SHORT_HEIGHT',
        'MEDIUM_HEIGHT',
        'TALL_HEIGHT',
      ] as const);
      // rcs.md: a standalone card's suggestions are url and phone types.
      const s = suggestions(b.suggestions, 'suggestions', ['url', 'phone'], LIMITS.rcsSuggestions);
      return {
        ...common,
        template_type,
        title,
        ...(description === undefined ? {} : { description }),
        ...(media_url === undefined ? {} : { media_url }),
        ...(orientation === undefined ? {} : { orientation }),
        ...(media_height === undefined ? {} : { media_height }),
        ...(s === undefined ? {} : { suggestions: s }),
      };
    }
    case 'carousel': {
      const card_width = optionalOneOf(b.card_width, 'card_width', ['SMALL', 'MEDIUM'] as const);
      const raw = array(b.cards, 'cards', LIMITS.rcsCardsMin, LIMITS.rcsCardsMax, 'cards');
      const cards = raw.map((rc, i): RcsCard => {
        const f = `cards[${i}]`;
        const c = object(rc, f);
        const title = text(c.title, `${f}.title`);
        const description = optionalText(c.description, `${f}.description`);
        const media_url = optionalHttpUrl(c.media_url, `${f}.media_url`);
        // rcs.md shows a card's suggestions carrying type, label and, for url, url; reply (with its
        // postback) is also accepted here: ours.
        const s = suggestions(c.suggestions, `${f}.suggestions`, ['url', 'reply'], LIMITS.rcsCardSuggestions);
        return {
          title,
          ...(description === undefined ? {} : { description }),
          ...(media_url === undefined ? {} : { media_url }),
          ...(s === undefined ? {} : { suggestions: s }),
        };
      });
      return { ...common, template_type, ...(card_width === undefined ? {} : { card_width }), cards };
    }
  }
}

/** The `{{name}}` placeholders of a template's text fields, each once, in order of appearance. */
export function rcsTemplateVariables(t: RcsTemplate): string[] {
  const texts: (string | undefined)[] = [];
  const addSuggestions = (list: readonly RcsSuggestion[] | undefined) => {
    for (const s of list ?? []) texts.push(s.label, s.postback, s.url, s.phone);
  };
  switch (t.template_type) {
    case 'text':
      texts.push(t.text);
      addSuggestions(t.suggestions);
      break;
    case 'standalone':
      texts.push(t.title, t.description, t.media_url);
      addSuggestions(t.suggestions);
      break;
    case 'carousel':
      for (const c of t.cards) {
        texts.push(c.title, c.description, c.media_url);
        addSuggestions(c.suggestions);
      }
      break;
  }
  const names = new Set<string>();
  for (const s of texts) {
    if (s === undefined) continue;
    for (const m of s.matchAll(/\{\{([A-Za-z0-9_]+)\}\}/g)) names.add(m[1] ?? '');
  }
  return [...names];
}

// ---------------------------------------------------------------------------------------------------
// RCS campaigns

/** A `POST /rcs_campaign_launcher` body. */
export function validateRcsCampaignRequest(v: unknown): RcsCampaignRequest {
  const b = body(v);
  const template_name = text(b.template_name, 'template_name');
  const campaign_name = text(b.campaign_name, 'campaign_name');
  if (b.contacts === undefined || (Array.isArray(b.contacts) && b.contacts.length === 0)) {
    missing('contacts', 'contacts is required: at least one contact');
  }
  if (!Array.isArray(b.contacts)) mustBe('contacts', 'an array of contacts', b.contacts);
  const contacts = b.contacts.map((raw, i): RcsContact => {
    const f = `contacts[${i}]`;
    const c = object(raw, f);
    if (c.mobile === undefined) missing(`${f}.mobile`);
    if (typeof c.mobile !== 'string' || !RCS_MOBILE.test(c.mobile)) {
      mustBe(`${f}.mobile`, 'exactly 10 digits', c.mobile);
    }
    const params = c.params === undefined ? undefined : stringMap(c.params, `${f}.params`);
    return { mobile: c.mobile, ...(params === undefined ? {} : { params }) };
  });
  return { template_name, campaign_name, contacts };
}

/** Every params key is a variable of the template, and every variable has a value in every contact. */
export function checkContactsAgainstTemplate(
  contacts: readonly RcsContact[],
  variables: readonly string[],
): void {
  const known = new Set(variables);
  const uses = variables.length === 0 ? 'no variables' : variables.map((n) => `{{${n}}}`).join(', ');
  contacts.forEach((c, i) => {
    const params = c.params ?? {};
    for (const k of Object.keys(params)) {
      if (!known.has(k)) {
        invalid(
          `contacts[${i}].params.${k}`,
          `contacts[${i}].params.${k} is not a variable of the template (it uses ${uses})`,
        );
      }
    }
    for (const name of variables) {
      const value = params[name];
      if (value === undefined || value === '') {
        invalid(
          `contacts[${i}].params.${name}`,
          `contacts[${i}].params.${name} is missing: the template uses {{${name}}}, so each contact needs a value for it`,
        );
      }
    }
  });
}
