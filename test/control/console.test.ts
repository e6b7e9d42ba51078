/**
 * `GET /console`: the page and its assets over real HTTP, with a self-only Content-Security-Policy, and
 * nothing in them that loads from outside the bridge.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CONSOLE_CSP } from '../../src/control/console.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';

let rig: InProcessRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('GET /console', () => {
  it('serves the page and each asset with its type, a self-only CSP, and no cookie', async () => {
    rig = await startRig();
    const page = await fetch(`${rig.http}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('set-cookie')).toBeNull();
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toBe(CONSOLE_CSP);
    for (const directive of csp.split('; ')) {
      // Every source is the bridge itself (or a blob/data URL the page made); never a host elsewhere.
      for (const source of directive.split(' ').slice(1))
        expect(["'self'", "'none'", 'blob:', 'data:']).toContain(source);
    }
    const html = await page.text();
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(1);
    for (const ref of refs) {
      expect(ref.startsWith('/console/')).toBe(true);
      const asset = await fetch(`${rig.http}${ref}`);
      expect(asset.status, ref).toBe(200);
      expect(asset.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(asset.headers.get('content-type')).toMatch(/^text\/(css|javascript); charset=utf-8$/);
    }
    const worklet = await fetch(`${rig.http}/console/audio-worklet.js`);
    expect(worklet.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  });

  it('answers 404 with the error body for a file the console does not have, and never reads outside its folder', async () => {
    rig = await startRig();
    for (const path of ['/console/nope.js', '/console/..%2Fapp.ts', '/console/%2E%2E%2Fconfig.ts']) {
      const res = await fetch(`${rig.http}${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: string }).error).toBe('not_found');
    }
  });

  it('loads nothing from outside: no absolute URL in any of its files', () => {
    const dir = new URL('../../src/console/', import.meta.url);
    const files = readdirSync(dir);
    expect(files).toContain('index.html');
    for (const f of files) {
      const text = readFileSync(new URL(f, dir), 'utf8');
      expect(text, f).not.toMatch(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    }
  });
});
