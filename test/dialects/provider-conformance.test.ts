/**
 * Every registered provider dialect, held to what each must declare, driven from the registry
 * (src/dialects/): a wire that runs it, an emulator twin, its endpoint and docs page; for a dialect with
 * `provider_auth` credentials, fields whose checks name the field and never quote a secret, env twins
 * in the spec table and docs/configuration.md that give tenant default's credential, each secret
 * redacted in a log line, and (over real HTTP) no credential in a response or a log line. A new dialect
 * gets these tests by being registered; one that leaves out what these need fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_SPEC } from '../../src/config/spec.js';
import { loadConfig } from '../../src/config.js';
import {
  CREDENTIAL_DIALECTS,
  type CredentialFieldDecl,
  PROVIDER_DIALECT_DECLS,
  type ProviderDialectDecl,
} from '../../src/dialects/index.js';
import { TWINS } from '../../src/emulator/dialects/index.js';
import { DIALECT_CHOICES } from '../../src/emulator/dialects/params.js';
import { BridgeError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { PROVIDER_DIALECT_MODULES } from '../../src/media/dialects.js';
import { mediaRoute } from '../../src/media/endpoint.js';
import { envCredential, providerAuthFromUpsert } from '../../src/media/providers/provider-auth.js';
import { call, type Rig, restToken, startRig } from '../control/harness.js';

const CONFIGURATION = readFileSync('docs/configuration.md', 'utf8');
const PROVIDERS_DOC = readFileSync('docs/providers/README.md', 'utf8');

/** Names that say a field holds a secret: such a field must be of kind secret. */
const SECRET_NAME = /token|secret|password|key/i;

const decls = PROVIDER_DIALECT_DECLS as readonly ProviderDialectDecl[];
const named = <T extends { name: string }>(list: readonly T[]) => list.map((d) => [d.name, d] as const);
const fieldsOf = (d: ProviderDialectDecl) =>
  Object.entries(d.credential?.fields ?? {}) as [string, CredentialFieldDecl][];

/** A value of each kind its check accepts; secrets distinct per dialect and field, to search for. */
function example(dialect: string, field: string, kind: CredentialFieldDecl['kind']): unknown {
  if (kind === 'allow') return ['203.0.113.0/24'];
  if (kind === 'name') return `user-${dialect}`;
  return `conformance-${dialect}-${field}-Zx81`;
}

function credentialOf(d: ProviderDialectDecl): Record<string, unknown> {
  return Object.fromEntries(fieldsOf(d).map(([f, decl]) => [f, example(d.name, f, decl.kind)]));
}

function refusal(body: Record<string, unknown>): BridgeError {
  try {
    providerAuthFromUpsert(body);
  } catch (err) {
    if (err instanceof BridgeError) return err;
    throw err;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

describe.each(named(decls))('provider dialect %s', (name, d) => {
  it('is run by its wire, played by its emulator twin, offered by the CLI and documented', () => {
    expect(PROVIDER_DIALECT_MODULES[name as keyof typeof PROVIDER_DIALECT_MODULES].name).toBe(name);
    expect(TWINS[name as keyof typeof TWINS].decl).toBe(d);
    expect(DIALECT_CHOICES.split('|')).toContain(name);
    if (d.endpoint === 'root') return;
    expect(existsSync(`docs/providers/${name}.md`), `docs/providers/${name}.md`).toBe(true);
    expect(PROVIDERS_DOC).toContain(`(${name}.md)`);
  });

  it('is served where its endpoint says', () => {
    const path = d.endpoint === 'root' ? '/v1/media' : `/v1/media/${name}/acme`;
    const route = mediaRoute(path);
    if (d.endpoint === 'tcp') expect(route).toBeUndefined();
    else {
      expect(route?.dialect.name).toBe(name);
      expect(route?.tenant).toBe(d.endpoint === 'root' ? 'default' : 'acme');
    }
  });

  it('declares every env twin of its credential among its variables, each read as a twin, in the spec table and documented', () => {
    const own = (d.env ?? []).map((e) => e.name);
    const twins = fieldsOf(d).flatMap(([, f]) => (f.env === undefined ? [] : [f.env]));
    for (const env of twins) expect(own).toContain(env);
    // A variable no credential field takes would be documented and never read.
    for (const env of own) expect(twins, `${env} is read as no field's twin`).toContain(env);
    for (const env of own) {
      expect(CONFIG_SPEC.map((r) => r.name)).toContain(env);
      expect(CONFIGURATION).toContain(`| \`${env}\` |`);
    }
  });
});

describe.each(named(CREDENTIAL_DIALECTS as readonly ProviderDialectDecl[]))('provider_auth.%s', (name, d) => {
  const at = `provider_auth.${name}`;

  it('takes its credential, and a secret-looking field is of kind secret', () => {
    const cred = credentialOf(d);
    expect(providerAuthFromUpsert({ provider_auth: { [name]: cred } })).toEqual({ [name]: cred });
    for (const [f, decl] of fieldsOf(d))
      if (SECRET_NAME.test(f)) expect(decl.kind, `${at}.${f} looks like a secret`).toBe('secret');
  });

  it('refuses each field when wrong, naming it, never quoting a secret', () => {
    for (const [f, decl] of fieldsOf(d)) {
      const wrong = decl.kind === 'allow' ? ['not an address'] : decl.kind === 'name' ? 'a:b' : 'short';
      const err = refusal({ provider_auth: { [name]: { ...credentialOf(d), [f]: wrong } } });
      expect(err.field?.startsWith(`${at}.${f}`), err.message).toBe(true);
      expect(err.message.startsWith(`${at}.${f}`)).toBe(true);
      if (decl.kind === 'secret') {
        const long = `${example(name, f, 'secret')}${'q'.repeat(600)}`;
        const e = refusal({ provider_auth: { [name]: { ...credentialOf(d), [f]: long } } });
        expect(e.message.includes(String(example(name, f, 'secret')))).toBe(false);
      }
    }
    if (d.credential?.atLeastOne !== true) {
      const [first] = fieldsOf(d)[0]!;
      const { [first]: _gone, ...rest } = credentialOf(d);
      expect(refusal({ provider_auth: { [name]: rest } }).message).toMatch(
        new RegExp(`^${at.replace('.', '\\.')}\\.${first} is required`),
      );
    }
  });

  it("gives tenant default's credential from its env twins, all of them or none", () => {
    const twins = fieldsOf(d).filter(([, f]) => f.env !== undefined);
    if (twins.length === 0) return;
    const env = Object.fromEntries(
      twins.map(([f, decl]) => [decl.env!, String(example(name, f, decl.kind))]),
    );
    const config = loadConfig(env);
    expect(envCredential(config, name as never)).toEqual(
      Object.fromEntries(twins.map(([f, decl]) => [f, example(name, f, decl.kind)])),
    );
    if (twins.length > 1) {
      const partial = loadConfig({ [twins[0]![1].env!]: 'only-one-of-them' });
      expect(envCredential(partial, name as never)).toBeUndefined();
    }
  });

  it('has each secret redacted in a log line, as a body, a stored credential or the configuration carry it', () => {
    const lines: string[] = [];
    const log = createLogger('info', { write: (l: string) => void lines.push(l) });
    const cred = credentialOf(d);
    const env = Object.fromEntries(
      fieldsOf(d)
        .filter(([, f]) => f.env !== undefined)
        .map(([f, decl]) => [decl.env!, String(example(name, f, decl.kind))]),
    );
    const config = loadConfig(env);
    log.info({ body: { provider_auth: { [name]: cred } }, stored: { [name]: cred }, config }, 'credentials');
    log.info(cred, 'a credential as a line');
    expect(lines).toHaveLength(2);
    for (const [f, decl] of fieldsOf(d)) {
      if (decl.kind !== 'secret') continue;
      const secret = String(example(name, f, 'secret'));
      for (const line of lines) expect(line.includes(secret), `${f} in ${line}`).toBe(false);
    }
  });
});

describe('every provider credential through PUT and GET /v1/media-stream', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig({ providerUrl: null });
  });
  afterAll(() => rig.close());

  it('reads show only which dialects are configured; no credential in a response or a log line', async () => {
    const token = await restToken(['media:manage'], 'conformance');
    const dialects = CREDENTIAL_DIALECTS as readonly ProviderDialectDecl[];
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token,
      body: {
        media_ws_url: 'wss://bridge.example/v1/media',
        provider_auth: Object.fromEntries(dialects.map((d) => [d.name, credentialOf(d)])),
      },
    });
    expect(put.status, put.text).toBe(200);
    const get = await call(rig.http, 'GET', '/v1/media-stream', { token });
    expect(get.body.provider_auth).toEqual(
      Object.fromEntries(dialects.map((d) => [d.name, { configured: true }])),
    );
    for (const d of dialects)
      for (const [f, decl] of fieldsOf(d)) {
        if (decl.kind !== 'secret') continue;
        const secret = String(example(d.name, f, 'secret'));
        for (const text of [put.text, get.text, rig.logs.join('')]) expect(text.includes(secret)).toBe(false);
      }
  });
});
