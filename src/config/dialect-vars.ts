/**
 * The rows of the spec table the dialects declare (src/dialects/): `BOT_URL` and `BOT_DIALECT` written
 * from the bot dialects, each bot field's env twin (its description led by the dialects that take it),
 * and each provider dialect's credential twins. src/config/spec.ts places them among its own rows; the
 * configuration reads them and docs/configuration.md lists them like any other.
 */
import { BOTS, type EnvVarDecl, PROVIDER_ENV } from '../dialects/index.js';
import type { OtherVar } from './spec-types.js';

const code = (s: string) => `\`${s}\``;

function row(group: OtherVar['group'], v: EnvVarDecl, description = v.description): OtherVar {
  return {
    type: v.type,
    group,
    name: v.name,
    accepts: v.accepts,
    ...(v.default !== undefined && { default: v.default }),
    ...(v.defaultRule !== undefined && { defaultRule: v.defaultRule }),
    description,
  };
}

const wsDialects = BOTS.dialects.filter((d) => d.url.kind === 'ws').map((d) => code(d.name));
const builtinDialects = BOTS.dialects.filter((d) => d.url.kind === 'builtin').map((d) => code(d.name));
const urlLess = BOTS.dialects.filter((d) => d.url.kind === 'none').map((d) => code(d.name));

/** `BOT_URL`, `BOT_DIALECT` and the env twin of each bot field, in the registry's order. */
export const BOT_VARS: readonly OtherVar[] = [
  {
    type: 'text',
    group: 'bots',
    name: 'BOT_URL',
    accepts: '`ws://…`, `wss://…`, `builtin:echo`, `builtin:tone[:hz]`, `builtin:wav:<path>`',
    default: 'builtin:echo',
    description: `The bot of every tenant that has not set its own \`bot\` or \`bot_url\`, spoken to in \`BOT_DIALECT\`. ${BOTS.dialects
      .flatMap((d) => (d.url.doc === undefined ? [] : [d.url.doc]))
      .join('; ')}. Not limited by \`BOT_URL_ALLOWED_HOSTS\` or \`BOT_WAV_DIR\`.`,
  },
  {
    type: 'text',
    group: 'bots',
    name: 'BOT_DIALECT',
    // The names, too many for a table cell, are in the description.
    accepts: 'a bot dialect named below',
    defaultRule: `${code(BOTS.defaults.builtin)} for \`builtin:\` URLs, else ${code(BOTS.defaults.ws)}`,
    description: `How the bridge speaks to \`BOT_URL\`: ${BOTS.dialects.map((d) => `${code(d.name)} ${d.summary}`).join('; ')}. ${wsDialects.join(', ')} need a \`ws://\` or \`wss://\` \`BOT_URL\`, ${builtinDialects.join(', ')} a \`builtin:\` one${urlLess.length === 0 ? '' : `, ${urlLess.join(', ')} none`}. A tenant's own \`bot\` replaces the whole default bot.`,
  },
  ...BOTS.fields.flatMap((f) =>
    f.env === undefined
      ? []
      : [
          row(
            'bots',
            f.env,
            `For ${(BOTS.owners.get(f.key) ?? []).map(code).join(', ')}: ${f.env.description}`,
          ),
        ],
  ),
];

/** The provider dialects' variables (tenant `default`'s credentials), in the registry's order. */
export const PROVIDER_VARS: readonly OtherVar[] = PROVIDER_ENV.map((v) => row('security', v));
