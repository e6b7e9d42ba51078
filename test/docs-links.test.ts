/**
 * Every markdown file in the repository links only inside it, to files that exist: a reader who cloned
 * the repository must be able to follow every link.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', '.git', 'coverage']);

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownFiles(path));
    else if (entry.name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** What a link in `file` does wrong, or undefined when it points at a file of the repository. */
function linkProblem(file: string, target: string, root: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return 'links outside the repository';
  const path = decodeURIComponent(target.split('#')[0]!.split('?')[0]!);
  const full = path === '' ? file : path.startsWith('/') ? join(root, path) : resolve(dirname(file), path);
  const rel = relative(root, full);
  if (rel === '..' || rel.startsWith(`..${sep}`)) return 'points outside the repository';
  if (!existsSync(full)) return 'names a file that does not exist';
  const anchor = target.split('#')[1];
  if (anchor !== undefined && full.endsWith('.md') && !anchorsOf(readFileSync(full, 'utf8')).has(anchor)) {
    return 'names a heading that does not exist';
  }
  return undefined;
}

/** The anchors of a markdown file's headings, as a repository browser makes them. */
function anchorsOf(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)) {
    out.add(
      m[1]!
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return out;
}

/** The link targets of a markdown text, and bare web addresses outside code. */
function linksOf(text: string): { targets: string[]; bareUrls: string[] } {
  const prose = text.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`+[^`\n]*`+/g, '');
  const targets: string[] = [];
  for (const m of prose.matchAll(/\]\(\s*(?:<([^>]+)>|([^)\s]+))(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push((m[1] ?? m[2])!);
  }
  for (const m of prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) targets.push(m[1]!);
  for (const m of prose.matchAll(/<a\s[^>]*href="([^"]+)"/gi)) targets.push(m[1]!);
  const withoutTargets = prose.replace(/\]\([^)]*\)/g, '](…)').replace(/href="[^"]*"/gi, '');
  const bareUrls = [...withoutTargets.matchAll(/\b(?:https?|ftp):\/\/[^\s)>\]]+/gi)].map((m) =>
    m[0].replace(/[.,;:'"]+$/, ''),
  );
  return { targets, bareUrls };
}

describe('markdown links', () => {
  it('finds the links it checks (inline, reference, HTML, bare) and skips code', () => {
    const text = [
      'See [a](docs/a.md#x), [b](<b c.md> "t") and <a href="https://x.example">x</a>.',
      '[ref]: ../outside.md',
      'A bare https://example.com/page, but not `https://in.code` nor:',
      '```sh',
      'curl https://in.block.example',
      '```',
    ].join('\n');
    expect(linksOf(text)).toEqual({
      targets: ['docs/a.md#x', 'b c.md', '../outside.md', 'https://x.example'],
      bareUrls: ['https://example.com/page'],
    });
    const root = ROOT;
    const readme = join(root, 'README.md');
    expect(linkProblem(readme, 'https://example.com', root)).toBe('links outside the repository');
    expect(linkProblem(readme, 'mailto:a@b.example', root)).toBe('links outside the repository');
    expect(linkProblem(readme, '../shared/CONTRACT.md', root)).toBe('points outside the repository');
    expect(linkProblem(readme, 'docs/no-such-page.md', root)).toBe('names a file that does not exist');
    expect(linkProblem(readme, 'docs/configuration.md#server', root)).toBeUndefined();
    expect(linkProblem(readme, 'docs/configuration.md#no-such-heading', root)).toBe(
      'names a heading that does not exist',
    );
    expect(linkProblem(readme, 'docs/operations.md#shutting-down-drain', root)).toBeUndefined();
    expect(linkProblem(readme, '#two-commands', root)).toBeUndefined();
  });

  it('every markdown file of the repository links only to files inside it that exist', () => {
    const files = markdownFiles(ROOT);
    expect(files.map((f) => relative(ROOT, f))).toContain('README.md');
    const problems: string[] = [];
    for (const file of files) {
      const { targets, bareUrls } = linksOf(readFileSync(file, 'utf8'));
      for (const target of targets) {
        const problem = linkProblem(file, target, ROOT);
        if (problem !== undefined) problems.push(`${relative(ROOT, file)}: ${target} ${problem}`);
      }
      for (const url of bareUrls)
        problems.push(`${relative(ROOT, file)}: ${url} links outside the repository`);
    }
    expect(problems).toEqual([]);
  });
});
