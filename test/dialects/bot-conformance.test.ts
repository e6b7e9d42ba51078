/**
 * Every registered bot dialect, held to what each must declare, driven from the registry
 * (src/dialects/): a module that runs it and its docs section; for each of its fields a rule whose
 * messages name the field and what it accepts, an example it accepts, an env twin in the spec table and
 * in docs/configuration.md that fills the default bot, a refusal for the dialects that do not take it;
 * each secret redacted in a log line and absent from a REST read (over real HTTP) and from the logs. A
 * new dialect or field gets these tests by being registered; one that leaves out what these need fails.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBotFields, ENV_BOT_FIELDS, REST_BOT_FIELDS } from '../../src/config/bot-fields.js';
import { botUrlProblem } from '../../src/config/bot-url.js';
import { CONFIG_SPEC } from '../../src/config/spec.js';
import { loadConfig } from '../../src/config.js';
import { BOT_DIALECT_DECLS, BOTS, type BotDialectDecl, type BotFieldDecl } from '../../src/dialects/index.js';
import { STAND_INS } from '../../src/emulator/stand-ins.js';
import { createLogger } from '../../src/log.js';
import { BOT_DIALECT_MODULES } from '../../src/media/dialects.js';
import { call, type Rig, restToken, startRig } from '../control/harness.js';

const CONFIGURATION = readFileSync('docs/configuration.md', 'utf8');
const BOTS_DOC = readFileSync('docs/bots.md', 'utf8');

/** A URL each kind of dialect accepts (none for a dialect that takes none). */
const EXAMPLE_URL = { ws: 'wss://bot.example/ws', builtin: 'builtin:echo', none: undefined } as const;
/** `url` as a source gives it for a dialect: left out for a dialect that takes none. */
const urlOf = (d: BotDialectDecl) => (d.url.kind === 'none' ? {} : { url: EXAMPLE_URL[d.url.kind] });

/** A field's names that say it holds a secret: such a field must be declared one. */
const SECRET_NAME = /key|secret|token|password/i;

/** Values of the wrong kind or size for any field: each field refuses at least one. */
const BAD_VALUES: unknown[] = [true, 12_345, [], {}, '', 'x'.repeat(100_000), [{ a: 1 }]];

const dialects = BOT_DIALECT_DECLS as readonly BotDialectDecl[];
const fieldsOf = (d: BotDialectDecl) => d.fields as readonly BotFieldDecl[];
/** The fields a dialect cannot do without, at their examples, by key. */
const requiredOf = (d: BotDialectDecl) =>
  Object.fromEntries((d.requires ?? []).map((k) => [k, fieldsOf(d).find((f) => f.key === k)!.example]));
const named = <T extends { name: string }>(list: readonly T[]) => list.map((d) => [d.name, d] as const);

/** A dialect's whole `bot` as a tenant writes it: its URL and every field at its example. */
function restBot(d: BotDialectDecl): Record<string, unknown> {
  const bot: Record<string, unknown> = { dialect: d.name, ...urlOf(d) };
  for (const f of fieldsOf(d)) bot[f.rest] = f.example;
  return bot;
}

/** A secret example distinct enough to search for. */
const secretOf = (f: BotFieldDecl) => String(f.example);

/** Held as a secret: declared one, or named like one (so a declaration that forgets says so here too). */
const isSecret = (f: BotFieldDecl) => f.secret === true || SECRET_NAME.test(f.rest);

describe.each(named(dialects))('bot dialect %s', (name, d) => {
  it('is run by its module, documented in docs/bots.md, and has a stand-in when it calls a vendor with a key', () => {
    expect(BOT_DIALECT_MODULES[name as keyof typeof BOT_DIALECT_MODULES].decl).toBe(d);
    expect(BOTS_DOC).toContain(`## \`${name}\``);
    if (fieldsOf(d).some((f) => f.secret === true)) expect(STAND_INS).toHaveProperty([name]);
  });

  it('takes its URL kind and refuses the other, naming the field', () => {
    const good = checkBotFields(
      { dialect: name, ...urlOf(d), ...requiredOf(d) },
      REST_BOT_FIELDS,
      botUrlProblem,
    );
    expect(good.problems).toEqual([]);
    if (d.url.kind === 'none') {
      // A dialect that takes no URL refuses any, and says what it takes instead.
      for (const url of [EXAMPLE_URL.ws, EXAMPLE_URL.builtin]) {
        const bad = checkBotFields({ dialect: name, url, ...requiredOf(d) }, REST_BOT_FIELDS, botUrlProblem);
        expect(bad.problems.map((p) => p.message)).toEqual([
          expect.stringMatching(
            new RegExp(`^bot\\.url does not apply to dialect ${name}, which takes no URL; `),
          ),
        ]);
      }
      return;
    }
    const other = d.url.kind === 'ws' ? EXAMPLE_URL.builtin : EXAMPLE_URL.ws;
    const bad = checkBotFields(
      { dialect: name, url: other, ...requiredOf(d) },
      REST_BOT_FIELDS,
      botUrlProblem,
    );
    expect(bad.problems).toHaveLength(1);
    expect(bad.problems[0]!.message).toMatch(new RegExp(`^bot\\.url must be .+ for dialect ${name}, got `));
  });

  it('refuses a bot without a field it requires, naming the field and the dialect', () => {
    for (const key of d.requires ?? []) {
      const f = fieldsOf(d).find((x) => x.key === key)!;
      const { [key]: _left, ...rest } = requiredOf(d);
      const checked = checkBotFields({ dialect: name, ...urlOf(d), ...rest }, REST_BOT_FIELDS, botUrlProblem);
      expect(checked.problems.map((p) => p.message)).toEqual([
        `bot.${f.rest} is required for dialect ${name}: ${f.accepts}`,
      ]);
      const env = f.env?.name;
      if (env === undefined) continue;
      expect(() => loadConfig({ BOT_DIALECT: name, ...urlOf(d) })).toThrow(
        `${env} is required for dialect ${name}`,
      );
    }
  });

  it('takes every field at its example, each kept as given', () => {
    const raw = Object.fromEntries(fieldsOf(d).map((f) => [f.key, f.example]));
    const checked = checkBotFields({ dialect: name, ...urlOf(d), ...raw }, REST_BOT_FIELDS, botUrlProblem);
    expect(checked.problems).toEqual([]);
    for (const f of fieldsOf(d)) expect(checked.bot![f.key as keyof typeof checked.bot]).toEqual(f.example);
  });
});

describe.each(named(BOTS.fields.map((f) => ({ ...f, name: f.key }))))('bot field %s', (key) => {
  const f = BOTS.fields.find((x) => x.key === key)!;
  const owners = BOTS.owners.get(key)!;

  it('declares what it accepts and a schema, and a secret-looking name is declared secret', () => {
    expect(f.accepts.length).toBeGreaterThan(5);
    expect(f.schema).toHaveProperty('type');
    if (SECRET_NAME.test(f.rest)) expect(f.secret, `${f.rest} looks like a secret`).toBe(true);
  });

  it('refuses bad values with messages that name the field and what it accepts, never quoting a secret', () => {
    const problems = BAD_VALUES.flatMap((v) => {
      const p = f.check(v, `bot.${f.rest}`, {});
      return p === undefined ? [] : [p];
    });
    expect(problems.length, 'refuses at least one value of the wrong kind or size').toBeGreaterThan(0);
    for (const p of problems) {
      expect(p.field.startsWith(`bot.${f.rest}`)).toBe(true);
      expect(p.message.startsWith(p.field)).toBe(true);
    }
    expect(problems.some((p) => p.message.includes(f.accepts))).toBe(true);
    if (f.secret === true) {
      const wrong = `${secretOf(f)} with spaces ${'z'.repeat(600)}`;
      const p = f.check(wrong, 'bot.x', {});
      expect(p).toBeDefined();
      expect(p!.message.includes(secretOf(f))).toBe(false);
    }
  });

  it('is refused for a dialect that does not take it, naming the field and the dialect', () => {
    const other = dialects.find((d) => !owners.includes(d.name));
    if (other === undefined) return;
    const checked = checkBotFields(
      { dialect: other.name, ...urlOf(other), ...requiredOf(other), [key]: f.example },
      REST_BOT_FIELDS,
      botUrlProblem,
    );
    expect(checked.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^bot\\.${f.rest} does not apply to dialect ${other.name} \\(only to ${owners.join(', ')}\\)`,
        ),
      ),
    ]);
  });

  it('has its env twin in the spec table and docs/configuration.md, and the twin fills the default bot', () => {
    if (f.env === undefined) return;
    const env = f.env.name;
    expect(ENV_BOT_FIELDS[key]).toBe(env);
    expect(CONFIG_SPEC.map((r) => r.name)).toContain(env);
    expect(CONFIGURATION).toContain(`| \`${env}\` |`);
    expect(CONFIGURATION).toMatch(new RegExp(`- \`${env}\`: For [^\\n]*\`${owners[0]}\``));
    const owner = dialects.find((d) => d.name === owners[0])!;
    const text = f.envValue === 'json' ? JSON.stringify(f.example) : String(f.example);
    const url = urlOf(owner).url;
    // The fields the owner cannot do without, by their own twins.
    const required = Object.fromEntries(
      Object.entries(requiredOf(owner)).map(([k, v]) => [ENV_BOT_FIELDS[k]!, String(v)]),
    );
    const config = loadConfig({
      BOT_DIALECT: owner.name,
      ...(url !== undefined && { BOT_URL: url }),
      ...required,
      [env]: text,
    });
    expect(config.bot[key as keyof typeof config.bot]).toEqual(f.example);
  });
});

describe.each(named(BOTS.fields.filter((f) => f.secret === true).map((f) => ({ ...f, name: f.key }))))(
  'secret bot field %s',
  (key) => {
    const f = BOTS.fields.find((x) => x.key === key)!;
    it('is redacted from a log line wherever a bot carries it', () => {
      const lines: string[] = [];
      const log = createLogger('info', { write: (l: string) => void lines.push(l) });
      const s = secretOf(f);
      log.info(
        { [f.rest]: s, [f.key]: s, bot: { [f.rest]: s, [f.key]: s }, tenant: { bot: { [f.key]: s } } },
        'bot',
      );
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('[redacted]');
      expect(lines[0]!.includes(s)).toBe(false);
    });
  },
);

describe('every bot dialect through PUT and GET /v1/media-stream', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ providerUrl: null });
  });
  afterAll(() => rig.close());

  it.each(named(dialects))(
    '%s: every field round-trips, each secret only as its hint, in no response or log line',
    async (_name, d) => {
      const token = await restToken(['media:manage'], 'conformance');
      const bot = restBot(d);
      const put = await call(rig.http, 'PUT', '/v1/media-stream', {
        token,
        body: { media_ws_url: 'wss://bridge.example/v1/media', bot },
      });
      expect(put.status, put.text).toBe(200);
      const get = await call(rig.http, 'GET', '/v1/media-stream', { token });
      const shown = get.body.bot as Record<string, unknown>;
      expect(shown.dialect).toBe(d.name);
      for (const f of fieldsOf(d)) {
        if (isSecret(f)) {
          expect(shown).not.toHaveProperty(f.rest);
          expect(shown[`${f.rest}_hint`]).toMatch(/^\*{4}/);
        } else expect(shown[f.rest]).toEqual(f.example);
      }
      for (const f of fieldsOf(d).filter(isSecret)) {
        for (const text of [put.text, get.text, rig.logs.join('')])
          expect(text.includes(secretOf(f))).toBe(false);
      }
    },
  );
});
