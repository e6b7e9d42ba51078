/**
 * rcs.md's tables (templates per type, suggestions, campaigns), checked by documents.ts's checker.
 * Written from the document alone, never from the bridge's validators.
 */
import { check, type Field, type Obj, object, type Table } from './documents.js';
import { badRequest } from './errors.js';
import type { RcsCard, RcsSuggestion, RcsTemplate } from './wire.js';

const E164 = /^\+[1-9][0-9]{6,14}$/;
const MOBILE = /^[0-9]{10}$/;

// ---------------------------------------------------------------------------------------------------
// rcs.md tables

const RCS_COMMON: Table = {
  action: { type: 'string', required: true, oneOf: ['create_template'] },
  template_name: { type: 'string', required: true, pattern: /^\S+$/ },
  template_type: { type: 'string', required: true, oneOf: ['text', 'standalone', 'carousel'] },
  bot_name: { type: 'string', required: true },
};

const RCS_TYPES: Readonly<Record<string, { fields: Table; suggestions: readonly string[] }>> = {
  text: {
    fields: { text: { type: 'string', required: true }, suggestions: { type: 'array' } },
    suggestions: ['reply', 'url', 'phone'],
  },
  standalone: {
    fields: {
      title: { type: 'string', required: true },
      description: { type: 'string' },
      media_url: { type: 'string' },
      orientation: { type: 'string', oneOf: ['VERTICAL', 'HORIZONTAL'] },
      media_height: { type: 'string', oneOf: ['SHORT_HEIGHT', 'MEDIUM_HEIGHT', 'TALL_HEIGHT'] },
      suggestions: { type: 'array' },
    },
    suggestions: ['url', 'phone'],
  },
  carousel: {
    fields: {
      card_width: { type: 'string', oneOf: ['SMALL', 'MEDIUM'] },
      cards: { type: 'array', required: true },
    },
    // rcs.md names a card's suggestion fields (type, label, url for url) but not its types: any.
    suggestions: ['reply', 'url', 'phone'],
  },
};
const CARD: Table = {
  title: { type: 'string', required: true },
  description: { type: 'string' },
  media_url: { type: 'string' },
  suggestions: { type: 'array' },
};
const CARDS_MIN = 2;
const CARDS_MAX = 10;

/** The suggestion table: each type's conditional field and its rule. */
const SUGGESTION_FIELD: Readonly<Record<string, { field: 'postback' | 'url' | 'phone'; rule: Field }>> = {
  reply: { field: 'postback', rule: { type: 'string', required: true } },
  url: { field: 'url', rule: { type: 'string', required: true } },
  phone: { field: 'phone', rule: { type: 'string', required: true, pattern: E164 } },
};

const RCS_CAMPAIGN: Table = {
  template_name: { type: 'string', required: true },
  campaign_name: { type: 'string', required: true },
  contacts: { type: 'array', required: true },
};

// ---------------------------------------------------------------------------------------------------
// rcs.md

export function rcsTemplate(b: Obj): RcsTemplate {
  check(b, RCS_COMMON);
  const type = b.template_type as RcsTemplate['template_type'];
  const rules = RCS_TYPES[type]!;
  check(b, rules.fields);
  const base = {
    template_name: b.template_name as string,
    template_type: type,
    bot_name: b.bot_name as string,
  };
  if (type === 'carousel') {
    const raw = b.cards as unknown[];
    if (raw.length < CARDS_MIN || raw.length > CARDS_MAX)
      throw badRequest(`cards must hold ${CARDS_MIN} to ${CARDS_MAX} cards`);
    const cards = raw.map((rc, i): RcsCard => {
      const c = object(rc, `cards[${i}]`);
      check(c, CARD, `cards[${i}].`);
      return {
        title: c.title as string,
        ...(typeof c.description === 'string' ? { description: c.description } : {}),
        ...(typeof c.media_url === 'string' ? { media_url: c.media_url } : {}),
        suggestions: suggestions(c.suggestions, `cards[${i}].suggestions`, rules.suggestions, false),
      };
    });
    return { ...base, texts: [], cards };
  }
  const texts = (type === 'text' ? [b.text] : [b.title, b.description, b.media_url]).filter(
    (s): s is string => typeof s === 'string',
  );
  return {
    ...base,
    texts,
    suggestions: suggestions(b.suggestions, 'suggestions', rules.suggestions, type === 'text'),
  };
}

function suggestions(
  v: unknown,
  at: string,
  allowed: readonly string[],
  typeRequired: boolean,
): RcsSuggestion[] {
  if (v === undefined || v === null) return [];
  return (v as unknown[]).map((raw, i) => {
    const s = object(raw, `${at}[${i}]`);
    // "type: yes (text type)": elsewhere a suggestion without one is read by the field it carries.
    const type =
      s.type ??
      (typeRequired ? undefined : s.url !== undefined ? 'url' : s.phone !== undefined ? 'phone' : 'reply');
    if (typeof type !== 'string' || !allowed.includes(type)) {
      throw badRequest(`${at}[${i}].type must be one of ${allowed.join(', ')}`);
    }
    const rule = SUGGESTION_FIELD[type]!;
    check(s, { label: { type: 'string', required: true }, [rule.field]: rule.rule }, `${at}[${i}].`);
    return {
      type: type as RcsSuggestion['type'],
      label: s.label as string,
      [rule.field]: s[rule.field] as string,
    };
  });
}

/** The `{{name}}` placeholders of a template's texts and suggestions. */
export function rcsVariables(t: RcsTemplate): string[] {
  const all = [...t.texts, ...(t.cards ?? []).flatMap((c) => [c.title, c.description, c.media_url])];
  for (const s of [...(t.suggestions ?? []), ...(t.cards ?? []).flatMap((c) => c.suggestions ?? [])]) {
    all.push(s.label, s.postback, s.url, s.phone);
  }
  const names = new Set<string>();
  for (const s of all) for (const m of (s ?? '').matchAll(/\{\{([A-Za-z0-9_]+)\}\}/g)) names.add(m[1]!);
  return [...names];
}

export interface RcsCampaignRequest {
  readonly template_name: string;
  readonly campaign_name: string;
  readonly contacts: readonly {
    readonly mobile: string;
    readonly params?: Readonly<Record<string, string>>;
  }[];
}

/** A `/rcs_campaign_launcher` body; `variables` are the template's, each needing a value per contact. */
export function rcsCampaignRequest(
  b: Obj,
  variables: (name: string) => readonly string[] | undefined,
): RcsCampaignRequest {
  check(b, RCS_CAMPAIGN);
  const names = variables(b.template_name as string);
  // rcs.md: "400 | Malformed body, unknown template_name or invalid field value".
  if (names === undefined) throw badRequest(`unknown template_name ${JSON.stringify(b.template_name)}`);
  const raw = b.contacts as unknown[];
  if (raw.length === 0) throw badRequest('contacts must hold at least one contact');
  const contacts = raw.map((rc, i) => {
    const c = object(rc, `contacts[${i}]`);
    check(
      c,
      { mobile: { type: 'string', required: true, pattern: MOBILE }, params: { type: 'object' } },
      `contacts[${i}].`,
    );
    const params = (c.params ?? {}) as Obj;
    for (const [k, v] of Object.entries(params)) {
      if (!names.includes(k))
        throw badRequest(`contacts[${i}].params.${k} is not a variable of the template`);
      if (typeof v !== 'string') throw badRequest(`contacts[${i}].params.${k} must be a string`);
    }
    for (const n of names) {
      if (typeof params[n] !== 'string')
        throw badRequest(`contacts[${i}].params.${n} is required: the template uses {{${n}}}`);
    }
    return {
      mobile: c.mobile as string,
      ...(c.params === undefined ? {} : { params: params as Record<string, string> }),
    };
  });
  return { template_name: b.template_name as string, campaign_name: b.campaign_name as string, contacts };
}
