import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { acceptsCell, defaultCell, renderConfigDoc } from '../src/config/doc.js';
import { CONFIG_SPEC, type VarSpec } from '../src/config/spec.js';
import { type Config, ConfigError, loadConfig } from '../src/config.js';

const DOC = new URL('../docs/configuration.md', import.meta.url);

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('configuration spec and docs/configuration.md', () => {
  it('docs/configuration.md is what the spec table writes (run `npm run docs:config` after a change)', () => {
    expect(readFileSync(DOC, 'utf8')).toBe(renderConfigDoc());
  });

  it('lists every variable once, with short table cells', () => {
    const doc = renderConfigDoc();
    const rows = doc.split('\n').filter((l) => l.startsWith('| `'));
    expect(rows.map((l) => l.split('`')[1])).toEqual(CONFIG_SPEC.map((r) => r.name));
    for (const row of rows) {
      for (const cell of row.split(' | ')) expect(cell.length, row).toBeLessThan(100);
    }
  });

  it('loadConfig reads exactly the variables of the table', () => {
    const read = new Set<string>();
    const env = new Proxy({} as Record<string, string | undefined>, {
      get: (_target, name) => {
        if (typeof name === 'string') read.add(name);
        return undefined;
      },
    });
    loadConfig(env);
    expect([...read].sort()).toEqual(CONFIG_SPEC.map((r) => r.name).sort());
  });

  it('every integer is held to the range the document states, and fills its field', () => {
    const integers = CONFIG_SPEC.filter((r) => r.type === 'integer');
    expect(integers.length).toBeGreaterThan(20);
    for (const row of integers) {
      expect(acceptsCell(row)).toBe(row.values?.join(', ') ?? `${row.min} to ${row.max}`);
      const below = String(row.min - 1);
      expect(problemsOf({ [row.name]: below }), row.name).toContain(
        `${row.name} must be an integer from ${row.min} to ${row.max}, got "${below}"`,
      );
      const c = loadConfig({ [row.name]: String(row.max) });
      expect(c[row.field as keyof Config], row.name).toBe(row.max);
      if (typeof row.default === 'number') {
        expect(loadConfig({})[row.field as keyof Config], row.name).toBe(row.default);
        expect(defaultCell(row)).toBe(`\`${row.default}\``);
      }
    }
  });

  it('every fixed text default in the table is the value loadConfig uses', () => {
    const c = loadConfig({});
    const fields: Record<string, keyof Config> = {
      HOST: 'host',
      NODE_ENV: 'nodeEnv',
      BOT_URL: 'botUrl',
      STATE_STORE: 'stateStore',
      STATE_KEY_PREFIX: 'stateKeyPrefix',
      MESSAGING_RCS_COUNTRY_CODE: 'messagingRcsCountryCode',
      LOG_LEVEL: 'logLevel',
      MEDIA_AUTH: 'mediaAuth',
      RECORD_CALLS: 'recordCalls',
      RECORDINGS_DIR: 'recordingsDir',
      DENOISE: 'denoise',
    };
    const withDefault = CONFIG_SPEC.filter(
      (r: VarSpec) => r.type !== 'integer' && 'default' in r && r.default !== undefined,
    );
    expect(withDefault.map((r) => r.name).sort()).toEqual(Object.keys(fields).sort());
    for (const row of withDefault) {
      expect(String(c[fields[row.name]!]), row.name).toBe((row as { default: string }).default);
      expect(renderConfigDoc()).toContain(`| \`${row.name}\` |`);
    }
  });

  it('DSP_WORKERS: inline on 2 CPUs or fewer (one worker on 2 with DENOISE=true), CPUs - 1 above; the document states the rule', () => {
    expect(loadConfig({}, [], { cpus: 1 }).dspWorkers).toBe(0);
    expect(loadConfig({}, [], { cpus: 2 }).dspWorkers).toBe(0);
    expect(loadConfig({ DENOISE: 'true' }, [], { cpus: 1 }).dspWorkers).toBe(0);
    expect(loadConfig({ DENOISE: 'true' }, [], { cpus: 2 }).dspWorkers).toBe(1);
    expect(loadConfig({ DENOISE: 'false' }, [], { cpus: 2 }).dspWorkers).toBe(0);
    expect(loadConfig({ DENOISE: 'true' }, [], { cpus: 4 }).dspWorkers).toBe(3);
    expect(loadConfig({ DENOISE: 'true', DSP_WORKERS: '0' }, [], { cpus: 2 }).dspWorkers).toBe(0);
    expect(loadConfig({}, [], { cpus: 3 }).dspWorkers).toBe(2);
    expect(loadConfig({}, [], { cpus: 8 }).dspWorkers).toBe(7);
    expect(loadConfig({ DSP_WORKERS: '3' }, [], { cpus: 2 }).dspWorkers).toBe(3);
    const row = renderConfigDoc()
      .split('\n')
      .find((l) => l.startsWith('| `DSP_WORKERS` |'));
    expect(row).toBe(
      '| `DSP_WORKERS` | integer | 0 with 1 CPU; with 2, 1 if `DENOISE=true`, else 0; else CPUs − 1 | 0 to 64 |',
    );
  });

  it('REQUEST_TIMEOUT_MS defaults to PROVIDER_READ_TIMEOUT_MS + 5 s, as the document says', () => {
    expect(loadConfig({}).requestTimeoutMs).toBe(35_000);
    expect(loadConfig({ PROVIDER_READ_TIMEOUT_MS: '60000' }).requestTimeoutMs).toBe(65_000);
    expect(renderConfigDoc()).toContain(
      '| `REQUEST_TIMEOUT_MS` | integer | `PROVIDER_READ_TIMEOUT_MS` + 5000 |',
    );
  });
});
