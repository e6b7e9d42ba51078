/**
 * Who a messaging request speaks for: the three bearer credentials of chat.md (a workspace API key
 * `vbk_` + 32 hex, an account API token (a UUID), a JWT signed with the emulator's secret whose `tenant`
 * names the account), the `account_id` rules, and the per-account request limits.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { bearerToken, type RestVerifier } from '../../auth/jwt.js';
import { isBridgeError } from '../../errors.js';
import { ApiError, badRequest } from './errors.js';
import { type Account, type MessagingState, TIER_LIMITS, type Workspace } from './state.js';
import { NETWORK_ERRORS } from './wire.js';

export const API_KEY_PATTERN = /^vbk_[0-9a-f]{32}$/;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const JWT_PATTERN = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export const newApiKey = (): string => `vbk_${randomBytes(16).toString('hex')}`;

/** chat.md: "Token lifetime: 365 days". */
export const CREDENTIAL_LIFETIME_MS = 365 * 24 * 3600 * 1000;

/** The credential a request was made with and the accounts it may address. */
export interface Caller {
  readonly kind: 'api_key' | 'account_token' | 'jwt';
  readonly accountIds: readonly string[];
}

const unauthorized = (message: string) => new ApiError(401, message);

export interface NewWorkspace {
  readonly workspace: Workspace;
  readonly apiKey: string;
  readonly accounts: { readonly account_id: string; readonly account_token: string }[];
}

/** A workspace with `n` accounts, its API key and an account token each. */
export function createWorkspace(
  state: MessagingState,
  n: number,
  o: { workspaceId?: string; accountIds?: readonly string[]; apiKey?: string } = {},
): NewWorkspace {
  const workspace = state.addWorkspace(o.workspaceId ?? `ws_${randomBytes(6).toString('hex')}`);
  const apiKey = o.apiKey ?? newApiKey();
  state.addCredential({
    token: apiKey,
    kind: 'api_key',
    workspaceId: workspace.id,
    revoked: false,
    expiresAt: Date.now() + CREDENTIAL_LIFETIME_MS,
  });
  const accounts = [];
  for (let i = 0; i < n; i++) {
    const id = o.accountIds?.[i] ?? `acct_${randomBytes(6).toString('hex')}`;
    state.addAccount(id, workspace);
    const token = randomUUID();
    state.addCredential({
      token,
      kind: 'account_token',
      accountId: id,
      revoked: false,
      expiresAt: Date.now() + CREDENTIAL_LIFETIME_MS,
    });
    accounts.push({ account_id: id, account_token: token });
  }
  return { workspace, apiKey, accounts };
}

/** The account a JWT's tenant names, created (in a workspace of its own) on first use. */
function tenantAccount(state: MessagingState, tenant: string): Account {
  const known = state.accounts.get(tenant);
  if (known !== undefined) return known;
  return state.addAccount(tenant, state.addWorkspace(`ws_jwt_${tenant}`));
}

export async function authenticate(
  state: MessagingState,
  verify: RestVerifier,
  authorization: string | undefined,
): Promise<Caller> {
  const token = bearerToken(authorization);
  if (token === undefined) {
    throw unauthorized('missing bearer token: send "Authorization: Bearer <API key, account token or JWT>"');
  }
  if (token.startsWith('vbk_') || UUID_PATTERN.test(token)) {
    const isKey = token.startsWith('vbk_');
    if (isKey && !API_KEY_PATTERN.test(token)) {
      throw unauthorized('malformed API key: expected "vbk_" followed by 32 hex characters');
    }
    const what = isKey ? 'API key' : 'account token';
    const c = state.credentials.get(token);
    if (c === undefined) throw unauthorized(`unknown ${what}`);
    if (c.revoked) throw unauthorized(`${what} has been revoked`);
    if (c.expiresAt !== undefined && Date.now() >= c.expiresAt) throw unauthorized(`${what} has expired`);
    if (c.kind === 'api_key') {
      return { kind: 'api_key', accountIds: [...(state.workspaces.get(c.workspaceId!)?.accountIds ?? [])] };
    }
    return { kind: 'account_token', accountIds: [c.accountId!] };
  }
  if (JWT_PATTERN.test(token)) {
    try {
      const p = await verify(`Bearer ${token}`);
      return { kind: 'jwt', accountIds: [tenantAccount(state, p.tenant).id] };
    } catch (err) {
      throw unauthorized(isBridgeError(err) ? err.message : 'bearer token is invalid');
    }
  }
  throw unauthorized('bearer token is not an API key ("vbk_" + 32 hex), an account token (a UUID) or a JWT');
}

/** The account a request addresses, by the `account_id` rules of chat.md. */
export function accountOf(state: MessagingState, caller: Caller, accountId: unknown): Account {
  if (caller.kind === 'account_token') {
    if (accountId !== undefined) {
      throw badRequest('account_id must not be sent with an account API token: the token names its account');
    }
    return state.accounts.get(caller.accountIds[0]!)!;
  }
  if (accountId === undefined) {
    if (caller.accountIds.length === 1) return state.accounts.get(caller.accountIds[0]!)!;
    throw badRequest(
      `account_id is required: this ${caller.kind === 'jwt' ? 'token' : 'API key'} links ${caller.accountIds.length} accounts`,
    );
  }
  if (typeof accountId !== 'string' || accountId === '') {
    throw badRequest('account_id must be a non-empty string');
  }
  const a = state.accounts.get(accountId);
  if (a === undefined) throw new ApiError(404, `account ${accountId} not found`);
  // chat.md: a token "belonging to another account" is rejected with 401.
  if (!caller.accountIds.includes(accountId)) {
    throw unauthorized(`this token does not belong to account ${accountId}`);
  }
  return a;
}

/**
 * Admits a request into a sliding window of `windowMs`, or throws 429 with the network code. Answers
 * the admission time (performance.now()).
 */
export function admit(log: number[], limit: number, windowMs: number, code: number, what: string): number {
  const now = performance.now();
  let drop = 0;
  while (drop < log.length && log[drop]! <= now - windowMs) drop++;
  if (drop > 0) log.splice(0, drop);
  if (log.length >= limit) throw new ApiError(429, `rate limit hit: ${what}`, code);
  log.push(now);
  return now;
}

export const SENDER_LIMIT_PER_S = 80;
export const LIST_LIMIT_PER_MIN = 100;

/** Admits a sender request (80 in any rolling second), answering its admission time. */
export function admitSend(a: Account): number {
  return admit(
    a.senderLog,
    SENDER_LIMIT_PER_S,
    1_000,
    NETWORK_ERRORS.rateLimitHit,
    `more than ${SENDER_LIMIT_PER_S} requests per second; slow to ${SENDER_LIMIT_PER_S} per second or lower`,
  );
}

export function admitList(a: Account): void {
  admit(
    a.listLog,
    LIST_LIMIT_PER_MIN,
    60_000,
    NETWORK_ERRORS.rateLimitExceeded,
    `more than ${LIST_LIMIT_PER_MIN} template list requests per minute`,
  );
}

/** Refuses `n` more messages past the credits (402) or the tier's 24-hour limit (429, 133000). */
export function assertRoom(state: MessagingState, a: Account, n: number): void {
  const credits = state.creditRoom(a);
  if (credits < n) {
    throw new ApiError(
      402,
      `insufficient credits: ${n} message${n === 1 ? '' : 's'} need ${n} credit${n === 1 ? '' : 's'}, the account has ${credits}`,
    );
  }
  const room = state.tierRoom(a);
  if (room < n) {
    const limit = TIER_LIMITS[a.tier]!.toLocaleString('en-US');
    throw new ApiError(
      429,
      `messaging tier limit reached: tier ${a.tier} allows ${limit} messages per 24 hours; room for ${Math.max(0, room)}, ${n} asked`,
      NETWORK_ERRORS.rateLimitExceeded,
    );
  }
}
