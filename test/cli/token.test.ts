/** `npm run token`: a REST token carries every scope by default, including the messaging ones. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

async function token(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/token.ts', ...args], {
    env: { ...process.env, AUTH_JWT_SECRET: 'token-cli-test-secret' },
  });
  return decodeJwt(stdout.trim()) as Record<string, unknown>;
}

describe('npm run token', () => {
  it('mints every REST scope by default, messaging ones included; --scope narrows them', async () => {
    const all = await token('--tenant', 'acme');
    expect(all.tenant).toBe('acme');
    expect(new Set((all.scope as string).split(' '))).toEqual(
      new Set([
        ...['media:manage', 'sessions:read', 'calls:control', 'messages:read', 'messages:manage'],
        // The console's: the softphone, listen-in and recordings.
        ...['media:call', 'sessions:listen', 'recordings:read', 'recordings:manage'],
      ]),
    );
    const one = await token('--scope', 'messages:read');
    expect(one.scope).toBe('messages:read');
  });

  it('--help names the default scopes', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/token.ts', '--help']);
    expect(stdout).toContain('messages:read messages:manage');
  });
});
