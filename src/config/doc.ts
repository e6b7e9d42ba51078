/**
 * docs/configuration.md, written from the spec table: one section per group, a table of short cells
 * (name, type, default, accepted values) and each variable's description in a list beneath it.
 * `npm run docs:config` writes it; test/config-doc.test.ts fails when the file and the table differ.
 */
import { CONFIG_SPEC, GROUPS, type Group, type VarSpec } from './spec.js';

const TYPE_NAMES: Record<VarSpec['type'], string> = {
  integer: 'integer',
  enum: 'one of',
  text: 'text',
  url: 'URL',
  secret: 'secret',
  list: 'list',
  directory: 'directory',
};

/** The table cell of a variable's default: its value, or the rule it follows. */
export function defaultCell(row: VarSpec): string {
  if (row.type === 'integer')
    return typeof row.default === 'number' ? `\`${row.default}\`` : row.default.rule;
  if (row.type === 'enum') return `\`${row.default}\``;
  if (row.default !== undefined) return `\`${row.default}\``;
  return row.defaultRule ?? 'unset';
}

/** The table cell of what a variable accepts. */
export function acceptsCell(row: VarSpec): string {
  if (row.type === 'integer') {
    return row.values !== undefined ? row.values.join(', ') : `${row.min} to ${row.max}`;
  }
  if (row.type === 'enum') return row.values.map((v) => `\`${v}\``).join(', ');
  return row.accepts;
}

const INTRO = `# Configuration

<!-- Written by \`npm run docs:config\` from src/config/spec.ts: change the table there, then run it. -->

Every setting is an environment variable with a \`--flag\` twin: \`BOT_URL\` is \`--bot-url\`, and a
flag given on the command line wins over the environment. The bridge reads them once, at start-up. A
bad value stops it with one message, one line per variable, naming what that variable accepts. Units
are in the names: \`_MS\` milliseconds, \`_BYTES\` bytes, \`_PER_SEC\` per second. An empty value is the
same as an unset one.

With \`NODE_ENV=production\` the bridge refuses to start on development shortcuts: it needs
\`MEDIA_SECRET\`, \`AUTH_JWT_SECRET\` or \`AUTH_JWKS_URL\`, and \`PROVIDER_BASE_URL\`; \`STATE_SECRET_KEY\`
with a Redis \`STATE_STORE\`; and \`MESSAGING_WEBHOOK_SECRET\` once \`MESSAGING_BASE_URL\` is set.
`;

export function renderConfigDoc(): string {
  const parts = [INTRO];
  for (const group of Object.keys(GROUPS) as Group[]) {
    const rows: readonly VarSpec[] = CONFIG_SPEC.filter((r) => r.group === group);
    if (rows.length === 0) continue;
    parts.push(`\n## ${GROUPS[group]}\n\n`);
    parts.push('| variable | type | default | accepts |\n|---|---|---|---|\n');
    for (const r of rows) {
      parts.push(`| \`${r.name}\` | ${TYPE_NAMES[r.type]} | ${defaultCell(r)} | ${acceptsCell(r)} |\n`);
    }
    parts.push('\n');
    for (const r of rows) parts.push(`- \`${r.name}\`: ${r.description}\n`);
  }
  return parts.join('');
}
