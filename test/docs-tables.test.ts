/**
 * Tables in the docs hold short cells (a file name and a few words, a figure, a yes/no); rules, reasons
 * and numbers go in prose or lists beneath the table. A cell longer than MAX_CELL fails, naming the file,
 * the line and the length.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAX_CELL = 120;
const SKIP = new Set(['node_modules', 'dist', '.git', 'coverage']);

function markdownUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownUnder(path));
    else if (entry.name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** The cells of one table row, split as GitHub does: on every pipe not escaped by a backslash. */
function cellsOf(row: string): string[] {
  const inner = row
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '');
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim());
}

/** Every table cell longer than `max` characters in a markdown text, outside fenced code. */
function longCells(text: string, max: number): { line: number; length: number }[] {
  const out: { line: number; length: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, i) => {
    const opener = /^\s*(`{3,}|~{3,})/.exec(raw)?.[1];
    if (opener !== undefined) {
      if (fence === undefined) fence = opener;
      else if (opener[0] === fence[0] && opener.length >= fence.length) fence = undefined;
      return;
    }
    if (fence !== undefined || !/^\s*\|/.test(raw)) return;
    for (const cell of cellsOf(raw)) {
      const length = [...cell].length;
      if (length > max) out.push({ line: i + 1, length });
    }
  });
  return out;
}

describe('markdown tables', () => {
  it('finds long cells in tables only, splits on unescaped pipes and skips fenced code', () => {
    const long = 'x'.repeat(121);
    const text = [
      '| a | b |',
      '|---|---|',
      `| short | ${long} |`,
      `| ${'y'.repeat(60)} \\| ${'y'.repeat(60)} | ok |`,
      `| ${'z'.repeat(120)} | é${'e'.repeat(119)} |`,
      `A paragraph, not a table: ${long}`,
      '```',
      `| ${long} |`,
      '```',
      `| ${long}`,
    ].join('\n');
    expect(longCells(text, MAX_CELL)).toEqual([
      { line: 3, length: 121 },
      { line: 4, length: 124 },
      { line: 10, length: 121 },
    ]);
    expect(cellsOf('| a | `b` | c \\| d |')).toEqual(['a', '`b`', 'c \\| d']);
  });

  it(`no table cell in README.md, docs/ or examples/ is longer than ${MAX_CELL} characters`, () => {
    const files = [
      join(ROOT, 'README.md'),
      ...markdownUnder(join(ROOT, 'docs')),
      ...markdownUnder(join(ROOT, 'examples')),
    ];
    expect(files.map((f) => relative(ROOT, f))).toContain('docs/ARCHITECTURE.md');
    const problems: string[] = [];
    for (const file of files) {
      for (const { line, length } of longCells(readFileSync(file, 'utf8'), MAX_CELL)) {
        problems.push(
          `${relative(ROOT, file)}:${line}: a table cell of ${length} characters (at most ${MAX_CELL})`,
        );
      }
    }
    expect(problems).toEqual([]);
  });
});
