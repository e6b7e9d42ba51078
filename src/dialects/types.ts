/**
 * What a dialect declares about itself, as plain data: the shapes of src/dialects/. A bot dialect
 * declares the fields of its `bot` object (REST name, env twin, rule, message, secrecy, OpenAPI schema),
 * the URL it takes and its docs line; a provider dialect its endpoint, its `provider_auth` credential
 * fields with their env twins, and the log paths holding its secrets. The code that runs a dialect
 * (its wire, its leg format, its constructor) is in src/media/, joined to these by src/media/dialects.ts.
 *
 * Nothing here imports from the rest of src/ but src/tools/settings.ts, the tool fields' rules, which
 * itself imports nothing of src/ (bot/tools.ts): the logger (redaction), the configuration (env twins,
 * the spec table, the checks) and every folder above read it, so it sits below them all.
 */

/** A configuration variable a dialect owns: a row of the spec table (src/config/spec.ts). */
export interface EnvVarDecl {
  readonly name: string;
  readonly type: 'text' | 'secret' | 'url' | 'list';
  /** What it accepts, in a few words (the table cell). */
  readonly accepts: string;
  readonly default?: string;
  readonly defaultRule?: string;
  /**
   * What it does. For a bot field's twin this follows "For `<the dialects taking it>`: ", written from
   * the registry, so the list stays true as dialects opt in.
   */
  readonly description: string;
}

/** One problem with a field's value: the field as its source names it, and a line starting with it. */
export interface FieldProblem {
  readonly field: string;
  readonly message: string;
}

/** Why a URL may not be called: what is accepted, and the URL as a message may show it. */
export interface UrlProblem {
  readonly accepts: string;
  readonly shown: string;
}

/** What a field's check may ask of its source's rules. */
export interface FieldContext {
  /**
   * The source's rule for a URL the bridge will call for this bot (a webhook, an API base): for a
   * tenant's bot, its host held to BOT_URL_ALLOWED_HOSTS; undefined for the environment's bot, which
   * the operator wrote (as BOT_URL is not limited).
   */
  readonly dialled?: (url: string) => UrlProblem | undefined;
  /**
   * The source's rule for a file the bridge will read for this bot (a hold sound): for a tenant's bot,
   * only inside BOT_WAV_DIR (what is accepted, when refused); undefined for the environment's bot.
   */
  readonly readable?: (path: string) => string | undefined;
}

/**
 * A field of a tenant's `bot` (and of the environment's default bot), beside `dialect` and `url`. `V` is
 * the type of its checked value in BotSettings.
 */
export interface BotFieldDecl<K extends string = string, V = unknown> {
  /** Its name in BotSettings, as stored (sealed) in state/: `apiKey`. */
  readonly key: K;
  /** Its name in the REST `bot` object: `api_key`. */
  readonly rest: string;
  /** Its environment twin; undefined where the environment has none. */
  readonly env?: EnvVarDecl;
  /** How the twin's text becomes a value: as it is (default), JSON, or a whole number. */
  readonly envValue?: 'text' | 'json' | 'integer';
  /**
   * Write-only: never in a response or a log line (src/log.ts redacts its names), sealed at rest with
   * the rest of the bot; a read shows `<rest>_hint`, at most its last 4 characters.
   */
  readonly secret?: true;
  /** What it accepts, as messages and the OpenAPI document say it. */
  readonly accepts: string;
  /** A value it accepts, as a tenant would write it: the conformance tests store and read it back. */
  readonly example: V;
  /** Its OpenAPI schema (type, enum, ...); the description is written from `accepts` and `note`. */
  readonly schema: Readonly<Record<string, unknown>>;
  /** Said after `accepts` in the OpenAPI description ("added to start.customParameters"). */
  readonly note?: string;
  /**
   * Its value is a URL the bridge dials (an API base): for a tenant's bot its host is held to
   * BOT_URL_ALLOWED_HOSTS, when stored and at each dial, as `url`'s is.
   */
  readonly dials?: true;
  /**
   * Why `value` (never undefined or null) is not acceptable, or undefined. `field` is the field as its
   * source names it (`bot.api_key`, `BOT_API_KEY`); every message starts with it, names what is
   * accepted, and never quotes a secret. A field holding URLs the bridge calls checks each with
   * `context.dialled`.
   */
  check(value: unknown, field: string, context: FieldContext): FieldProblem | undefined;
  /** The value kept once checked; the value as given when absent. */
  value?(checked: unknown): V;
  /**
   * The value as a read shows it, when not as stored: URLs inside it with `maskUrl` (credentials and
   * query values masked). A value shown as stored is a copy.
   */
  shown?(value: V, maskUrl: (url: string) => string): unknown;
}

/** How a bot dialect's `url` is read. */
export interface BotUrlDecl {
  /**
   * `ws`: a ws:// or wss:// URL the bridge dials; `builtin`: a builtin: URL, a bot inside the bridge;
   * `none`: the dialect takes no `url` (one given is refused): it learns where to dial from its fields
   * (Ultravox's create-call on `api_base` answers with the socket to join).
   */
  readonly kind: 'ws' | 'builtin' | 'none';
  /** Of the dialects of its kind, the one a URL gets when no dialect is named (exactly one a kind). */
  readonly defaultForKind?: true;
  /** The URL used when none is given (a vendor's public endpoint); undefined: `url` is required. */
  readonly default?: string;
  /** What BOT_URL's description says of this dialect's URLs. */
  readonly doc?: string;
}

export interface BotDialectDecl {
  /** `bot.dialect` and BOT_DIALECT. */
  readonly name: string;
  readonly url: BotUrlDecl;
  /** The fields it takes beside `dialect` and `url`, in the order reads and documents list them. */
  readonly fields: readonly BotFieldDecl<string, unknown>[];
  /**
   * Values some of its fields take when left out (a vendor's API base), by key: checked and stored as if
   * given, so a URL among them is held to BOT_URL_ALLOWED_HOSTS when a tenant stores its bot.
   */
  readonly defaults?: Readonly<Record<string, unknown>>;
  /**
   * The keys of the fields it cannot do without (ElevenLabs' `agentId`): a bot of this dialect that
   * leaves one out is refused, naming it, when stored and at start-up.
   */
  readonly requires?: readonly string[];
  /** How the bridge speaks to it, as BOT_DIALECT's description says it ("as a client of ..."). */
  readonly summary: string;
}

/** A field of a provider dialect's `provider_auth` object. */
export interface CredentialFieldDecl {
  /** `secret`: 8 to 512 characters, write-only; `name`: a user name; `allow`: addresses or CIDR ranges. */
  readonly kind: 'secret' | 'name' | 'allow';
  /** The variable giving it for tenant `default` (a row of `env`); undefined where none does. */
  readonly env?: string;
}

export interface ProviderDialectDecl {
  /** The path's last word (`/v1/media/<name>`), `default` for `/v1/media`; reads and configuration say it. */
  readonly name: string;
  /** The platform, as messages name it ("no Twilio credentials are configured ..."). */
  readonly platform: string;
  /** How its calls come: `/v1/media` itself, `/v1/media/<name>[/<tenant>]`, or a TCP listener of its own. */
  readonly endpoint: 'root' | 'path' | 'tcp';
  /** Its `provider_auth` value: every field required, or with `atLeastOne` any of them. */
  readonly credential?: {
    readonly fields: Readonly<Record<string, CredentialFieldDecl>>;
    readonly atLeastOne?: true;
  };
  /** Configuration variables it owns (its credentials' env twins), in the document's order. */
  readonly env?: readonly EnvVarDecl[];
  /** Log paths holding its secrets beyond its credential fields (a header it authenticates by). */
  readonly redact?: readonly string[];
}
