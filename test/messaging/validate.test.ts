import { describe, expect, it } from 'vitest';
import { BridgeError } from '../../src/errors.js';
import type { RcsTemplate, TemplateComponent } from '../../src/messaging/types.js';
import {
  checkAudienceAgainstTemplate,
  checkContactsAgainstTemplate,
  parseTemplateManagerRequest,
  rcsMobileFrom,
  rcsTemplateVariables,
  templateBodyVariableCount,
  templateCampaign,
  validateCallTemplate,
  validateChatCampaignRequest,
  validateChatSendRequest,
  validateChatTemplateInput,
  validatePhone,
  validateRcsCampaignRequest,
  validateRcsTemplate,
} from '../../src/messaging/validate.js';

/**
 * `validate` accepts `input` and returns it as given: a validator that dropped or rewrote a field would
 * fail here.
 */
function accepted(validate: (v: unknown) => unknown, input: unknown): void {
  expect(validate(input)).toEqual(input);
}

/** The BridgeError `fn` throws. */
function refusal(fn: () => unknown): BridgeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof BridgeError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

const TEMPLATE = {
  name: 'order_update',
  category: 'UTILITY',
  language: 'en_US',
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}' },
    { type: 'BODY', text: 'Hello {{1}}, your order {{2}} ships today.' },
    { type: 'FOOTER', text: 'Reply STOP to opt out' },
    {
      type: 'BUTTONS',
      buttons: [
        { type: 'URL', text: 'Track', url: 'https://shop.example/track/{{1}}' },
        { type: 'PHONE_NUMBER', text: 'Call us', phone_number: '+14155550100' },
        { type: 'QUICK_REPLY', text: 'Thanks' },
      ],
    },
  ],
  sample_values: { '1': 'Ada', '2': 'A-100' },
};

const tpl = (patch: Record<string, unknown>) => ({ ...TEMPLATE, ...patch });
const withComponents = (...components: unknown[]) => tpl({ components });
const BODY = { type: 'BODY', text: 'Hi' };

describe('chat template manager requests', () => {
  it('parses the four actions', () => {
    expect(parseTemplateManagerRequest({ action: 'create', templateData: TEMPLATE })).toEqual({
      action: 'create',
      templateData: TEMPLATE,
    });
    expect(parseTemplateManagerRequest({ action: 'get_status', templateName: 'a_b' })).toEqual({
      action: 'get_status',
      templateName: 'a_b',
    });
    expect(parseTemplateManagerRequest({ action: 'sync' })).toEqual({ action: 'sync' });
    expect(parseTemplateManagerRequest({ action: 'delete', templateName: 'a_b' })).toEqual({
      action: 'delete',
      templateName: 'a_b',
    });
  });

  it('action is required at the root (the document message)', () => {
    for (const b of [{}, { templateData: { ...TEMPLATE, action: 'create' } }, { action: '' }]) {
      const e = refusal(() => parseTemplateManagerRequest(b));
      expect(e.message).toBe('action is required');
      expect(e.status).toBe(400);
    }
    expect(refusal(() => parseTemplateManagerRequest({ action: 'publish' })).message).toBe(
      'action must be one of create, get_status, sync, delete, got "publish"',
    );
    expect(refusal(() => parseTemplateManagerRequest('x')).code).toBe('bad_request');
  });

  it('templateData is required: a template at the root is refused', () => {
    const e = refusal(() => parseTemplateManagerRequest({ action: 'create', ...TEMPLATE }));
    expect(e.message).toBe('templateData is required');
    expect(e.code).toBe('bad_request');
  });

  it('get_status and delete need templateName', () => {
    for (const action of ['get_status', 'delete']) {
      const e = refusal(() => parseTemplateManagerRequest({ action }));
      expect(e.message).toBe('templateName is required');
      expect(e.field).toBe('templateName');
    }
  });
});

describe('chat template input', () => {
  it('accepts a full template and returns it', () => {
    expect(validateChatTemplateInput(TEMPLATE)).toEqual(TEMPLATE);
    const minimal = { name: 'hello', category: 'MARKETING', language: 'pt_BR', components: [BODY] };
    expect(validateChatTemplateInput(minimal)).toEqual(minimal);
  });

  it('Template name invalid: uppercase, spaces, hyphens, camel case, digits', () => {
    for (const name of [
      'Order_update',
      'order update',
      'order-update',
      'orderUpdate',
      '_order',
      'order_',
      'a__b',
      '',
    ]) {
      const e = refusal(() => validateChatTemplateInput(tpl({ name })));
      expect(e.message).toBe('Template name invalid');
      expect(e.field).toBe('templateData.name');
    }
    expect(validateChatTemplateInput(tpl({ name: 'a_b_c' })).name).toBe('a_b_c');
  });

  it('Language format should be locale-specific', () => {
    for (const language of ['en', 'EN_US', 'en-US', 'en_us', 'english']) {
      expect(refusal(() => validateChatTemplateInput(tpl({ language }))).message).toBe(
        'Language format should be locale-specific',
      );
    }
    expect(validateChatTemplateInput(tpl({ language: 'en_GB' })).language).toBe('en_GB');
  });

  it('category is one of the three, uppercase', () => {
    expect(refusal(() => validateChatTemplateInput(tpl({ category: 'utility' }))).message).toBe(
      'templateData.category must be one of MARKETING, UTILITY, AUTHENTICATION, got "utility"',
    );
    expect(validateChatTemplateInput(tpl({ category: 'AUTHENTICATION' })).category).toBe('AUTHENTICATION');
  });

  it('BODY component is required', () => {
    const noBody = { ...tpl({ components: [{ type: 'FOOTER', text: 'x' }] }), sample_values: undefined };
    expect(refusal(() => validateChatTemplateInput(noBody)).message).toBe('BODY component is required');
    expect(refusal(() => validateChatTemplateInput(withComponents())).message).toBe(
      'BODY component is required',
    );
    const noComponents = { name: 'a', category: 'UTILITY', language: 'en_US' };
    expect(refusal(() => validateChatTemplateInput(noComponents)).message).toBe('BODY component is required');
  });

  it('one of each component', () => {
    for (const type of ['HEADER', 'BODY', 'FOOTER']) {
      const c = type === 'HEADER' ? { type, format: 'TEXT', text: 'x' } : { type, text: 'x' };
      const e = refusal(() => validateChatTemplateInput(withComponents(BODY, c, c)));
      expect(e.message).toMatch(new RegExp(`may hold one ${type} component`));
    }
    const buttons = { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'a' }] };
    expect(refusal(() => validateChatTemplateInput(withComponents(BODY, buttons, buttons))).field).toBe(
      'templateData.components[2].type',
    );
    expect(refusal(() => validateChatTemplateInput(withComponents(BODY, { type: 'IMAGE' }))).message).toBe(
      'templateData.components[1].type must be one of HEADER, BODY, FOOTER, BUTTONS, got "IMAGE"',
    );
  });

  it('BODY at most 1,024 characters and 10 variables', () => {
    accepted(validateChatTemplateInput, withComponents({ type: 'BODY', text: 'x'.repeat(1024) }));
    expect(
      refusal(() => validateChatTemplateInput(withComponents({ type: 'BODY', text: 'x'.repeat(1025) })))
        .message,
    ).toBe('templateData.components[0].text must be at most 1024 characters, got 1025');
    const ten = Array.from({ length: 10 }, (_, i) => `{{${i + 1}}}`).join(' ');
    const samples = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [String(i + 1), 's']));
    accepted(validateChatTemplateInput, {
      ...withComponents({ type: 'BODY', text: ten }),
      sample_values: samples,
    });
    const e = refusal(() =>
      validateChatTemplateInput({
        ...withComponents({ type: 'BODY', text: `${ten} {{11}}` }),
        sample_values: samples,
      }),
    );
    expect(e.message).toBe('templateData.components[0].text may hold at most 10 variables, got 11');
  });

  it('HEADER is TEXT, at most 60 characters and 1 variable', () => {
    const h = (c: Record<string, unknown>) => withComponents({ type: 'HEADER', format: 'TEXT', ...c }, BODY);
    expect(refusal(() => validateChatTemplateInput(h({ format: 'IMAGE', text: 'x' }))).message).toBe(
      'templateData.components[0].format must be TEXT, got "IMAGE"',
    );
    expect(refusal(() => validateChatTemplateInput(h({ text: 'x'.repeat(61) }))).message).toMatch(
      /at most 60/,
    );
    expect(refusal(() => validateChatTemplateInput(h({ text: '{{1}} {{2}}' }))).message).toBe(
      'templateData.components[0].text may hold at most 1 variable, got 2',
    );
  });

  it('FOOTER at most 60 characters, no variables', () => {
    const f = (text: string) => withComponents(BODY, { type: 'FOOTER', text });
    expect(refusal(() => validateChatTemplateInput(f('x'.repeat(61)))).field).toBe(
      'templateData.components[1].text',
    );
    expect(refusal(() => validateChatTemplateInput(f('Hi {{1}}'))).message).toBe(
      'templateData.components[1].text may not hold variables, got 1',
    );
  });

  it('BUTTONS: 1 to 3, text at most 20, the fields each type needs', () => {
    const b = (...buttons: unknown[]) => withComponents(BODY, { type: 'BUTTONS', buttons });
    const qr = { type: 'QUICK_REPLY', text: 'Yes' };
    expect(refusal(() => validateChatTemplateInput(b())).message).toBe(
      'templateData.components[1].buttons must hold 1 to 3 buttons, got 0',
    );
    expect(refusal(() => validateChatTemplateInput(b(qr, qr, qr, qr))).message).toMatch(
      /1 to 3 buttons, got 4/,
    );
    expect(
      refusal(() => validateChatTemplateInput(b({ type: 'QUICK_REPLY', text: 'x'.repeat(21) }))).message,
    ).toBe('templateData.components[1].buttons[0].text must be at most 20 characters, got 21');
    expect(refusal(() => validateChatTemplateInput(b(qr, { type: 'URL', text: 'Go' }))).message).toBe(
      'templateData.components[1].buttons[1].url is required',
    );
    expect(
      refusal(() => validateChatTemplateInput(b({ type: 'URL', text: 'Go', url: 'ftp://x/y' }))).message,
    ).toMatch(/buttons\[0\]\.url must be an http or https URL/);
    expect(refusal(() => validateChatTemplateInput(b({ type: 'PHONE_NUMBER', text: 'Call' }))).field).toBe(
      'templateData.components[1].buttons[0].phone_number',
    );
    expect(refusal(() => validateChatTemplateInput(b({ type: 'CALL', text: 'x' }))).message).toMatch(
      /must be one of URL, PHONE_NUMBER, QUICK_REPLY/,
    );
    accepted(validateChatTemplateInput, b(qr, { type: 'URL', text: 'Go', url: 'https://a.example/' }));
  });

  it('variables are numbered consecutively from 1 within each text', () => {
    const body = (text: string) => ({
      ...withComponents({ type: 'BODY', text }),
      sample_values: { '1': 'a', '2': 'b', '3': 'c' },
    });
    accepted(validateChatTemplateInput, body('{{2}} then {{1}} and {{1}} again'));
    expect(refusal(() => validateChatTemplateInput(body('{{1}} {{3}}'))).message).toBe(
      'templateData.components[0].text must number its variables consecutively from {{1}}: {{2}} is missing before {{3}}',
    );
    expect(refusal(() => validateChatTemplateInput(body('{{2}}'))).message).toMatch(/\{\{1\}\} is missing/);
    expect(refusal(() => validateChatTemplateInput(body('{{name}}'))).message).toBe(
      'templateData.components[0].text holds the variable {{name}}: variables are numbered {{1}}, {{2}}, ...',
    );
    expect(refusal(() => validateChatTemplateInput(body('{{0}}'))).field).toBe(
      'templateData.components[0].text',
    );
  });

  it('sample_values are required with variables, one non-empty string per number', () => {
    const { sample_values: _, ...noSamples } = TEMPLATE;
    const e = refusal(() => validateChatTemplateInput(noSamples));
    expect(e.message).toBe(
      'templateData.sample_values is required when the text holds variables: a sample for each of {{1}}, {{2}}',
    );
    expect(refusal(() => validateChatTemplateInput(tpl({ sample_values: { '1': 'Ada' } }))).message).toBe(
      'templateData.sample_values must give a non-empty sample for {{2}} under the key "2"',
    );
    expect(
      refusal(() => validateChatTemplateInput(tpl({ sample_values: { '1': 'Ada', '2': ' ' } }))).field,
    ).toBe('templateData.sample_values.2');
    expect(
      refusal(() => validateChatTemplateInput(tpl({ sample_values: { '1': 'Ada', '2': 7 } }))).message,
    ).toBe('templateData.sample_values.2 must be a string, got 7');
  });

  it('the account is never in a template payload', () => {
    expect(refusal(() => validateChatTemplateInput(tpl({ account_id: 'acc' }))).field).toBe(
      'templateData.account_id',
    );
  });

  it('counts the BODY variables', () => {
    expect(templateBodyVariableCount(TEMPLATE.components as TemplateComponent[])).toBe(2);
    expect(templateBodyVariableCount([{ type: 'BODY', text: 'none' }])).toBe(0);
    expect(templateBodyVariableCount([{ type: 'HEADER', format: 'TEXT', text: '{{1}}' }])).toBe(0);
  });
});

describe('phones', () => {
  it('accepts digits with the country code, of a length the country uses', () => {
    // US, India, Germany, the longest E.164 length, and Norway: 47 and 8 digits, 10 in all.
    for (const p of ['14155550100', '919876543210', '4915112345678', '882345678901234', '4712345678'])
      expect(validatePhone(p, 'to')).toBe(p);
  });

  it('says what is wrong', () => {
    const message = (v: unknown) => refusal(() => validatePhone(v, 'to')).message;
    expect(message('+14155550100')).toBe('to must be digits only: no "+", got "+14155550100"');
    expect(message('1 415 555 0100')).toBe('to must be digits only: no spaces, got "1 415 555 0100"');
    expect(message('1415-555-0100')).toMatch(/digits only/);
    expect(message('01415555010')).toMatch(/must start with the country code, not a 0/);
    // A US number without its 1: read as Switzerland (41) with too few digits.
    expect(message('4155550100')).toBe(
      'to has 8 digits after the country code 41: too few (is the country code missing?), got "4155550100"',
    );
    expect(message('99912345678')).toBe(
      'to starts with no known country code (is the country code missing?), got "99912345678"',
    );
    expect(message('1234567890123456')).toBe(
      'to has 15 digits after the country code 1: too many for it, got "1234567890123456"',
    );
    expect(message('15550100')).toMatch(/7 digits after the country code 1: too few/);
    expect(message('12')).toMatch(/too short: a country code and a number are needed/);
    expect(message(14155550100)).toMatch(/must be a string/);
    const e = refusal(() => validatePhone(undefined, 'audience_rows[2].phone'));
    expect([e.message, e.field]).toEqual(['audience_rows[2].phone is required', 'audience_rows[2].phone']);
  });

  it('rcsMobileFrom: the 10-digit national number of a number of the given country code', () => {
    expect(rcsMobileFrom('919876543210', '91')).toBe('9876543210');
    expect(rcsMobileFrom('+919876543210', '91')).toBe('9876543210');
    expect(rcsMobileFrom('14155550100', '1')).toBe('4155550100');
    // Another country code, or a national number that is not 10 digits.
    expect(rcsMobileFrom('14155550100', '91')).toBeUndefined();
    expect(rcsMobileFrom('4712345678', '47')).toBeUndefined();
    expect(rcsMobileFrom('4915112345678', '49')).toBeUndefined();
    expect(rcsMobileFrom('not a number', '91')).toBeUndefined();
    expect(rcsMobileFrom('919876543210', '+91')).toBeUndefined();
  });
});

describe('chat sends', () => {
  const send = (message: unknown, extra: Record<string, unknown> = {}) =>
    validateChatSendRequest({ to: '14155550100', message, ...extra });
  /** An accepted send, returned as given. */
  const sent = (message: unknown) => accepted(validateChatSendRequest, { to: '14155550100', message });

  it('text: non-empty, at most 4,096', () => {
    expect(send({ type: 'text', text: { body: 'hi' } }, { account_id: 'acc' })).toEqual({
      to: '14155550100',
      message: { type: 'text', text: { body: 'hi' } },
      account_id: 'acc',
    });
    sent({ type: 'text', text: { body: 'x'.repeat(4096) } });
    expect(refusal(() => send({ type: 'text', text: { body: 'x'.repeat(4097) } })).message).toBe(
      'message.text.body must be at most 4096 characters, got 4097',
    );
    expect(refusal(() => send({ type: 'text', text: { body: '' } })).field).toBe('message.text.body');
  });

  it('the payload is named like the type', () => {
    expect(refusal(() => send({ type: 'text', body: 'hi' })).message).toBe(
      'message.text is required: the payload object is named like message.type',
    );
    expect(refusal(() => send({ type: 'image', text: { body: 'hi' } })).field).toBe('message.image');
    expect(refusal(() => send({ type: 'video', video: {} })).message).toMatch(
      /message.type must be one of text, image, document, interactive, got "video"/,
    );
    expect(refusal(() => validateChatSendRequest({ to: '14155550100' })).message).toBe('message is required');
  });

  it('image: an http(s) JPEG or PNG link, caption at most 1,024', () => {
    for (const link of [
      'https://a.example/p.jpg',
      'http://a.example/p.JPEG?x=1',
      'https://a.example/p.png',
    ]) {
      sent({ type: 'image', image: { link } });
    }
    expect(
      refusal(() => send({ type: 'image', image: { link: 'https://a.example/p.gif' } })).message,
    ).toMatch(/JPEG or PNG/);
    expect(refusal(() => send({ type: 'image', image: { link: 'file:///p.png' } })).message).toMatch(
      /http or https/,
    );
    expect(
      refusal(() =>
        send({ type: 'image', image: { link: 'https://a.example/p.png', caption: 'x'.repeat(1025) } }),
      ).field,
    ).toBe('message.image.caption');
  });

  it('document: http(s) link, a known extension from the filename or the link', () => {
    sent({ type: 'document', document: { link: 'https://a.example/r.pdf' } });
    sent({ type: 'document', document: { link: 'https://a.example/get?id=1', filename: 'r.XLSX' } });
    sent({ type: 'document', document: { link: 'https://a.example/r.docx', filename: 'report' } });
    expect(
      refusal(() =>
        send({ type: 'document', document: { link: 'https://a.example/get', filename: 'report' } }),
      ).field,
    ).toBe('message.document.link');
    expect(
      refusal(() => send({ type: 'document', document: { link: 'https://a.example/r.exe' } })).message,
    ).toMatch(/pdf, doc, docx, xls, xlsx, ppt, pptx/);
    expect(
      refusal(() =>
        send({ type: 'document', document: { link: 'https://a.example/r.pdf', filename: 'r.zip' } }),
      ).field,
    ).toBe('message.document.filename');
    expect(
      refusal(() =>
        send({ type: 'document', document: { link: 'https://a.example/r.pdf', caption: 'x'.repeat(1025) } }),
      ).field,
    ).toBe('message.document.caption');
  });

  it('interactive: button type, body text, 1 to 3 reply buttons with unique ids and short titles', () => {
    const reply = (id: string, title = 'OK') => ({ type: 'reply', reply: { id, title } });
    const i = (buttons: unknown[], extra: Record<string, unknown> = {}) =>
      send({
        type: 'interactive',
        interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons }, ...extra },
      });
    expect(i([reply('a'), reply('b'), reply('c')]).message).toEqual({
      type: 'interactive',
      interactive: {
        type: 'button',
        body: { text: 'Pick' },
        action: { buttons: [reply('a'), reply('b'), reply('c')] },
      },
    });
    expect(refusal(() => i([])).message).toBe(
      'message.interactive.action.buttons must hold 1 to 3 buttons, got 0',
    );
    expect(refusal(() => i([reply('a'), reply('b'), reply('c'), reply('d')])).message).toMatch(/got 4/);
    expect(refusal(() => i([reply('a'), reply('a')])).message).toBe(
      'message.interactive.action.buttons[1].reply.id must be unique, got "a" twice',
    );
    expect(refusal(() => i([reply('a', 'x'.repeat(21))])).field).toBe(
      'message.interactive.action.buttons[0].reply.title',
    );
    expect(refusal(() => i([{ type: 'url', reply: { id: 'a', title: 'b' } }])).field).toBe(
      'message.interactive.action.buttons[0].type',
    );
    expect(refusal(() => i([reply('a')], { type: 'list' })).message).toBe(
      'message.interactive.type must be button, got "list"',
    );
    expect(refusal(() => i([reply('a')], { body: { text: '' } })).field).toBe(
      'message.interactive.body.text',
    );
    expect(refusal(() => i([reply('a')], { body: { text: 'x'.repeat(1025) } })).message).toMatch(
      /at most 1024/,
    );
  });

  it('template is not a sender type: chat.md lists text, image, document and interactive there', () => {
    const t = { type: 'template', template: { name: 'order_update', language: 'en_US' } };
    expect(refusal(() => send(t)).field).toBe('message.type');
  });

  it("a call's template: name, optional locale and string params, sent as a campaign of one row", () => {
    const t = validateCallTemplate({ name: 'order_update', language: 'en_US', body_params: ['Ada', 'A1'] });
    expect(templateCampaign('14155550100', t, 'call_one_abc')).toEqual({
      campaign_name: 'call_one_abc',
      template_name: 'order_update',
      audience_rows: [{ phone: '14155550100', BODY_1: 'Ada', BODY_2: 'A1' }],
    });
    expect(
      templateCampaign('14155550100', validateCallTemplate({ name: 'plain' }), 'c').audience_rows,
    ).toEqual([{ phone: '14155550100' }]);
    expect(refusal(() => validateCallTemplate({ name: 'Order' })).field).toBe('template.name');
    expect(refusal(() => validateCallTemplate({ name: 'a', language: 'en' })).field).toBe(
      'template.language',
    );
    expect(refusal(() => validateCallTemplate({ name: 'a', body_params: [1] })).field).toBe(
      'template.body_params[0]',
    );
    expect(
      refusal(() => validateCallTemplate({ name: 'a', body_params: Array(11).fill('x') })).message,
    ).toMatch(/at most 10 values/);
    expect(refusal(() => validateCallTemplate({ name: 'a', lang: 'en_US' })).field).toBe('template.lang');
  });

  it('to and account_id', () => {
    expect(refusal(() => send({ type: 'text', text: { body: 'hi' } }, { to: '+14155550100' })).field).toBe(
      'to',
    );
    expect(refusal(() => send({ type: 'text', text: { body: 'hi' } }, { account_id: 5 })).field).toBe(
      'account_id',
    );
  });
});

describe('chat campaigns', () => {
  const campaign = {
    campaign_name: 'spring_sale',
    template_name: 'order_update',
    audience_rows: [
      { phone: '14155550100', BODY_1: 'Ada', BODY_2: 'A1' },
      { phone: '919876543210', BODY_1: 'Lin', BODY_2: 'A2' },
    ],
  };

  it('accepts a campaign', () => {
    expect(validateChatCampaignRequest(campaign)).toEqual(campaign);
  });

  it('refuses missing names, bad names, empty audiences, bad rows', () => {
    expect(
      refusal(() => validateChatCampaignRequest({ ...campaign, campaign_name: undefined })).message,
    ).toBe('campaign_name is required');
    expect(
      refusal(() => validateChatCampaignRequest({ ...campaign, campaign_name: 'Spring-Sale' })).message,
    ).toBe('campaign_name must be lowercase words joined by underscores, got "Spring-Sale"');
    expect(refusal(() => validateChatCampaignRequest({ ...campaign, template_name: undefined })).code).toBe(
      'bad_request',
    );
    for (const audience_rows of [undefined, []]) {
      const e = refusal(() => validateChatCampaignRequest({ ...campaign, audience_rows }));
      expect([e.code, e.message]).toEqual([
        'bad_request',
        'audience_rows is required: at least one recipient',
      ]);
    }
    expect(
      refusal(() => validateChatCampaignRequest({ ...campaign, audience_rows: [{ phone: '4155550100' }] }))
        .field,
    ).toBe('audience_rows[0].phone');
    expect(
      refusal(() =>
        validateChatCampaignRequest({ ...campaign, audience_rows: [{ phone: '14155550100', name: 'Ada' }] }),
      ).message,
    ).toBe('audience_rows[0] may hold only phone and BODY_1, BODY_2, ...; got name');
    expect(
      refusal(() =>
        validateChatCampaignRequest({ ...campaign, audience_rows: [{ phone: '14155550100', BODY_0: 'x' }] }),
      ).field,
    ).toBe('audience_rows[0].BODY_0');
  });

  it('BODY_n numbered from BODY_1 with no gaps, the same on every row', () => {
    const rows = (...audience_rows: Record<string, string>[]) => ({ ...campaign, audience_rows });
    const gap = refusal(() =>
      validateChatCampaignRequest(rows({ phone: '14155550100', BODY_1: 'a', BODY_3: 'c' })),
    );
    expect([gap.field, gap.message]).toEqual([
      'audience_rows[0].BODY_2',
      'audience_rows[0] holds BODY_3 but not BODY_2: the values are numbered BODY_1, BODY_2, ... with no gaps',
    ]);
    const fewer = refusal(() =>
      validateChatCampaignRequest(
        rows(
          { phone: '14155550100', BODY_1: 'a', BODY_2: 'b' },
          { phone: '14155550101', BODY_1: 'a', BODY_2: 'b' },
          { phone: '14155550102', BODY_1: 'a' },
        ),
      ),
    );
    expect([fewer.field, fewer.message]).toEqual([
      'audience_rows[2].BODY_2',
      'audience_rows[2] holds BODY_1 only, but audience_rows[0] holds BODY_1 to BODY_2: every row gives the same BODY_n values',
    ]);
    const more = refusal(() =>
      validateChatCampaignRequest(rows({ phone: '14155550100' }, { phone: '14155550101', BODY_1: 'a' })),
    );
    expect([more.field, more.message]).toEqual([
      'audience_rows[1].BODY_1',
      'audience_rows[1] holds BODY_1 only, but audience_rows[0] holds no BODY_n: every row gives the same BODY_n values',
    ]);
    const same = rows({ phone: '14155550100' }, { phone: '4712345678' });
    expect(validateChatCampaignRequest(same)).toEqual(same);
  });

  it('checks rows against the template body: BODY_1..BODY_n, nothing beyond', () => {
    const rows = validateChatCampaignRequest(campaign).audience_rows;
    expect(() => checkAudienceAgainstTemplate(rows, 2)).not.toThrow();
    expect(refusal(() => checkAudienceAgainstTemplate(rows, 3)).message).toBe(
      "audience_rows[0] is missing BODY_3: the template's body has 3 variables, so each row needs BODY_1 to BODY_3",
    );
    expect(refusal(() => checkAudienceAgainstTemplate(rows, 1)).message).toBe(
      "audience_rows[0] holds BODY_2, but the template's body has only 1 variable",
    );
    const gap = [{ phone: '14155550100', BODY_1: 'a', BODY_3: 'c' }] as never;
    expect(refusal(() => checkAudienceAgainstTemplate(gap, 3)).field).toBe('audience_rows[0].BODY_2');
    const second = [rows[0]!, { phone: '14155550100', BODY_1: 'a' }] as never;
    expect(refusal(() => checkAudienceAgainstTemplate(second, 2)).field).toBe('audience_rows[1].BODY_2');
    expect(refusal(() => checkAudienceAgainstTemplate(rows, 0)).message).toMatch(/has no variables/);
  });
});

describe('RCS templates', () => {
  const common = { action: 'create_template', template_name: 'spring_promo', bot_name: 'Shop' };
  const textT = {
    ...common,
    template_type: 'text',
    text: 'Hi {{name}}, {{offer}} is yours',
    suggestions: [
      { type: 'reply', label: 'Yes', postback: 'yes_{{name}}' },
      { type: 'url', label: 'Open', url: 'https://shop.example/{{offer}}' },
    ],
  };
  const standalone = {
    ...common,
    template_type: 'standalone',
    title: 'Hello {{name}}',
    description: 'Now {{price}}',
    media_url: 'https://cdn.example/hero.png',
    orientation: 'HORIZONTAL',
    media_height: 'TALL_HEIGHT',
    suggestions: [{ type: 'url', label: 'Buy', url: 'https://shop.example' }],
  };
  const card = {
    title: 'Card {{n}}',
    suggestions: [{ type: 'url', label: 'See', url: 'https://a.example' }],
  };
  const carousel = { ...common, template_type: 'carousel', card_width: 'SMALL', cards: [card, card] };

  it('accepts each type', () => {
    expect(validateRcsTemplate(textT)).toEqual(textT);
    expect(validateRcsTemplate(standalone)).toEqual(standalone);
    expect(validateRcsTemplate(carousel)).toEqual(carousel);
  });

  it('common fields', () => {
    expect(refusal(() => validateRcsTemplate({ ...textT, action: undefined })).message).toBe(
      'action is required',
    );
    expect(refusal(() => validateRcsTemplate({ ...textT, action: 'create' })).message).toBe(
      'action must be create_template, got "create"',
    );
    expect(refusal(() => validateRcsTemplate({ ...textT, template_name: undefined })).message).toBe(
      'template_name is required',
    );
    expect(refusal(() => validateRcsTemplate({ ...textT, template_name: 'spring promo' })).message).toMatch(
      /without spaces/,
    );
    expect(refusal(() => validateRcsTemplate({ ...textT, template_name: 'x'.repeat(65) })).message).toMatch(
      /at most 64/,
    );
    expect(refusal(() => validateRcsTemplate({ ...textT, template_type: 'rich' })).field).toBe(
      'template_type',
    );
    expect(refusal(() => validateRcsTemplate({ ...textT, bot_name: '' })).field).toBe('bot_name');
  });

  it('text needs text; standalone a title and its enums; carousel 2 to 10 titled cards', () => {
    expect(refusal(() => validateRcsTemplate({ ...textT, text: undefined })).message).toBe(
      'text is required',
    );
    expect(refusal(() => validateRcsTemplate({ ...standalone, title: undefined })).field).toBe('title');
    expect(refusal(() => validateRcsTemplate({ ...standalone, orientation: 'SIDEWAYS' })).field).toBe(
      'orientation',
    );
    expect(refusal(() => validateRcsTemplate({ ...standalone, media_height: 'HUGE' })).field).toBe(
      'media_height',
    );
    expect(refusal(() => validateRcsTemplate({ ...standalone, media_url: 'ftp://x/y.png' })).field).toBe(
      'media_url',
    );
    expect(refusal(() => validateRcsTemplate({ ...carousel, cards: [card] })).message).toBe(
      'cards must hold 2 to 10 cards, got 1',
    );
    expect(refusal(() => validateRcsTemplate({ ...carousel, cards: Array(11).fill(card) })).message).toMatch(
      /got 11/,
    );
    expect(
      refusal(() => validateRcsTemplate({ ...carousel, cards: [card, { description: 'x' }] })).field,
    ).toBe('cards[1].title');
    expect(refusal(() => validateRcsTemplate({ ...carousel, card_width: 'LARGE' })).field).toBe('card_width');
    expect(refusal(() => validateRcsTemplate({ ...carousel, cards: undefined })).message).toBe(
      'cards is required',
    );
  });

  it('suggestion rules per type', () => {
    const sug = (s: unknown) => ({ ...textT, suggestions: [s] });
    expect(refusal(() => validateRcsTemplate(sug({ type: 'reply', label: 'Yes' }))).field).toBe(
      'suggestions[0].postback',
    );
    expect(refusal(() => validateRcsTemplate(sug({ type: 'url', label: 'Go' }))).field).toBe(
      'suggestions[0].url',
    );
    expect(
      refusal(() => validateRcsTemplate(sug({ type: 'url', label: 'Go', url: 'javascript:x' }))).field,
    ).toBe('suggestions[0].url');
    // rcs.md does not show which field carries a phone suggestion's number on a text template: not sent.
    expect(
      refusal(() => validateRcsTemplate(sug({ type: 'phone', label: 'Call', phone: '+14155550100' })))
        .message,
    ).toMatch(/^suggestions\[0\]\.type phone is not sent on a text template/);
    const onCard = (s: unknown) => ({ ...standalone, suggestions: [s] });
    accepted(validateRcsTemplate, onCard({ type: 'phone', label: 'Call', phone: '+14155550100' }));
    expect(
      refusal(() => validateRcsTemplate(onCard({ type: 'phone', label: 'Call', phone: '14155550100' })))
        .message,
    ).toBe('suggestions[0].phone must be an E.164 number like +14155550100, got "14155550100"');
    expect(refusal(() => validateRcsTemplate(sug({ type: 'reply', postback: 'x' }))).field).toBe(
      'suggestions[0].label',
    );
    expect(
      refusal(() => validateRcsTemplate(sug({ type: 'reply', label: 'x'.repeat(26), postback: 'x' })))
        .message,
    ).toMatch(/at most 25/);
    expect(refusal(() => validateRcsTemplate(sug({ type: 'share', label: 'x' }))).message).toBe(
      'suggestions[0].type must be one of reply, url, got "share"',
    );
    expect(
      refusal(() =>
        validateRcsTemplate({ ...standalone, suggestions: [{ type: 'reply', label: 'Yes', postback: 'y' }] }),
      ).message,
    ).toBe('suggestions[0].type must be one of url, phone, got "reply"');
    const cardWith = (s: unknown[]) => ({ ...carousel, cards: [card, { title: 't', suggestions: s }] });
    accepted(validateRcsTemplate, cardWith([{ type: 'reply', label: 'Yes', postback: 'y' }]));
    expect(
      refusal(() => validateRcsTemplate(cardWith([{ type: 'phone', label: 'Call', phone: '+14155550100' }])))
        .field,
    ).toBe('cards[1].suggestions[0].type');
    const u = { type: 'url', label: 'Go', url: 'https://a.example' };
    expect(refusal(() => validateRcsTemplate(cardWith([u, u, u]))).message).toBe(
      'cards[1].suggestions may hold at most 2 suggestions, got 3',
    );
    expect(refusal(() => validateRcsTemplate({ ...textT, suggestions: [u, u, u, u, u] })).message).toBe(
      'suggestions may hold at most 4 suggestions, got 5',
    );
  });

  it('lists the variables of every text field', () => {
    expect(rcsTemplateVariables(validateRcsTemplate(textT))).toEqual(['name', 'offer']);
    expect(rcsTemplateVariables(validateRcsTemplate(standalone))).toEqual(['name', 'price']);
    expect(rcsTemplateVariables(validateRcsTemplate(carousel) as RcsTemplate)).toEqual(['n']);
    expect(rcsTemplateVariables({ ...common, template_type: 'text', text: 'plain' } as RcsTemplate)).toEqual(
      [],
    );
  });
});

describe('RCS campaigns', () => {
  const req = {
    template_name: 'spring_promo',
    campaign_name: 'Spring 2026',
    contacts: [{ mobile: '9876543210', params: { name: 'Ada', offer: '10%' } }, { mobile: '9876543211' }],
  };

  it('accepts a campaign', () => {
    expect(validateRcsCampaignRequest(req)).toEqual(req);
  });

  it('refuses missing fields, empty contacts, bad mobiles and params', () => {
    expect(refusal(() => validateRcsCampaignRequest({ ...req, template_name: undefined })).message).toBe(
      'template_name is required',
    );
    expect(refusal(() => validateRcsCampaignRequest({ ...req, campaign_name: '' })).field).toBe(
      'campaign_name',
    );
    expect(refusal(() => validateRcsCampaignRequest({ ...req, contacts: [] })).message).toBe(
      'contacts is required: at least one contact',
    );
    for (const mobile of ['987654321', '19876543210', '+919876543', '98765 4321', 9876543210]) {
      expect(refusal(() => validateRcsCampaignRequest({ ...req, contacts: [{ mobile }] })).field).toBe(
        'contacts[0].mobile',
      );
    }
    expect(
      refusal(() =>
        validateRcsCampaignRequest({ ...req, contacts: [{ mobile: '9876543210', params: { n: 1 } }] }),
      ).message,
    ).toBe('contacts[0].params.n must be a string, got 1');
    expect(
      refusal(() => validateRcsCampaignRequest({ ...req, contacts: [{ mobile: '9876543210', params: 'x' }] }))
        .field,
    ).toBe('contacts[0].params');
  });

  it('checks params against the template variables', () => {
    const contacts = validateRcsCampaignRequest(req).contacts;
    expect(() => checkContactsAgainstTemplate([contacts[0]!], ['name', 'offer'])).not.toThrow();
    expect(refusal(() => checkContactsAgainstTemplate(contacts, ['name', 'offer'])).message).toBe(
      'contacts[1].params.name is missing: the template uses {{name}}, so each contact needs a value for it',
    );
    expect(refusal(() => checkContactsAgainstTemplate(contacts, ['name'])).message).toBe(
      'contacts[0].params.offer is not a variable of the template (it uses {{name}})',
    );
    expect(() => checkContactsAgainstTemplate([{ mobile: '9876543210' }], [])).not.toThrow();
  });
});
