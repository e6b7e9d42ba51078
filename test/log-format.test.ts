/**
 * LOG_FORMAT: pretty by default outside production, JSON in production; pino-pretty is loaded only for
 * the pretty format; secrets are redacted in both.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { createFormattedLogger } from '../src/log.js';
import { type ProcessRig, startRig } from './helpers/rig.js';
import { waitFor } from './helpers/wait.js';

const RECORDER = new URL('./helpers/record-modules.mjs', import.meta.url).href;

function sink() {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

describe('LOG_FORMAT', () => {
  it('is pretty outside production and json in production unless set; anything else is refused', () => {
    expect(loadConfig({}).logFormat).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'test' }).logFormat).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    const prod = {
      NODE_ENV: 'production',
      MEDIA_SECRET: 'prod-media-secret',
      AUTH_JWT_SECRET: 'prod-auth-secret',
      PROVIDER_BASE_URL: 'http://127.0.0.1:9/v1',
    };
    expect(loadConfig(prod).logFormat).toBe('json');
    expect(loadConfig({ ...prod, LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    let err: unknown;
    try {
      loadConfig({ LOG_FORMAT: 'text' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual(['LOG_FORMAT must be pretty or json, got "text"']);
  });

  it('pretty: readable lines, not JSON, with secrets redacted', async () => {
    const out = sink();
    const log = await createFormattedLogger('info', 'pretty', out.stream);
    log.info({ token: 'tok-secret-value', media_secret: 'ms-secret-value', calls: 3 }, 'hello there');
    const text = out.text();
    expect(text).toMatch(/INFO.*hello there/);
    expect(text).toContain('calls: 3');
    expect(text).toContain('[redacted]');
    expect(text).not.toContain('tok-secret-value');
    expect(text).not.toContain('ms-secret-value');
    expect(() => JSON.parse(text.split('\n')[0]!)).toThrow();
  });

  it('json: one JSON object a line, with secrets redacted', async () => {
    const out = sink();
    const log = await createFormattedLogger('info', 'json', out.stream);
    log.info({ token: 'tok-secret-value', calls: 3 }, 'hello there');
    const line = JSON.parse(out.text().trim()) as Record<string, unknown>;
    expect(line).toMatchObject({ msg: 'hello there', calls: 3, token: '[redacted]', level: 30 });
  });
});

describe('npm start with LOG_FORMAT', () => {
  let rig: ProcessRig | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** Starts the bridge process with `format`; answers its output and whether it loaded pino-pretty. */
  async function start(format: string, line: RegExp): Promise<{ output: string; loadedPretty: boolean }> {
    const dir = mkdtempSync(join(tmpdir(), 'vb-logfmt-'));
    dirs.push(dir);
    const file = join(dir, 'modules.txt');
    rig = await startRig({
      process: true,
      env: {
        LOG_FORMAT: format,
        LOG_LEVEL: 'info',
        NODE_OPTIONS: `--import tsx --import ${RECORDER}`,
        RECORD_MODULES_TO: file,
      },
    });
    const bridge = rig.process;
    // The log line itself (the banner beside it says the same in plain words).
    await waitFor(() => line.test(bridge.output()), 10_000, `a log line matching ${line}`);
    await rig.close();
    rig = undefined;
    return {
      output: bridge.output(),
      loadedPretty: readFileSync(file, 'utf8').includes('/node_modules/pino-pretty/'),
    };
  }

  it('pretty: pino-pretty loaded, lines for a person', async () => {
    const { output, loadedPretty } = await start('pretty', /INFO.*voicebridge listening/);
    expect(loadedPretty).toBe(true);
    expect(output).toMatch(/INFO.*voicebridge listening/);
    expect(output).not.toMatch(/^\{"level"/m);
  });

  it('json: pino-pretty never loaded, JSON lines', async () => {
    const { output, loadedPretty } = await start('json', /^\{.*"msg":"voicebridge listening"/m);
    expect(loadedPretty).toBe(false);
    const line = output.split('\n').find((l) => l.startsWith('{') && l.includes('voicebridge listening'));
    expect(JSON.parse(line!)).toMatchObject({ msg: 'voicebridge listening', level: 30 });
  });
});
