/**
 * JSON Web Tokens with `jose`: the REST control plane's bearer tokens (HS256 secret or a remote JWKS)
 * and the media endpoint's tokens (HS256 with the tenant's `media_secret`). Algorithms are pinned;
 * HMAC signatures are compared in constant time by jose.
 */
import { createRemoteJWKSet, decodeJwt, errors, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { BridgeError } from '../errors.js';

export const DEFAULT_TENANT = 'default';

/** Who a verified token speaks for. */
export interface Principal {
  readonly tenant: string;
  readonly scopes: ReadonlySet<string>;
  readonly subject: string | undefined;
}

const HMAC_ALGS = ['HS256'];
/** Asymmetric algorithms accepted from a JWKS; HS* is never accepted there (no HS/RS confusion). */
const JWKS_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'];

/** Token from `Authorization: Bearer …`, else undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
  return m?.[1];
}

export function principalOf(payload: JWTPayload): Principal {
  const scopes = new Set<string>();
  if (typeof payload.scope === 'string')
    for (const s of payload.scope.split(' ')) if (s !== '') scopes.add(s);
  const scp = payload.scp;
  if (Array.isArray(scp)) for (const s of scp) if (typeof s === 'string') scopes.add(s);
  const tenant =
    typeof payload.tenant === 'string' && payload.tenant !== '' ? payload.tenant : DEFAULT_TENANT;
  return { tenant, scopes, subject: payload.sub };
}

function unauthorized(err: unknown, what: string): BridgeError {
  let reason = 'is invalid';
  if (err instanceof errors.JWTExpired) reason = 'has expired';
  else if (err instanceof errors.JWTClaimValidationFailed) reason = `fails the "${err.claim}" claim check`;
  else if (err instanceof errors.JOSEAlgNotAllowed) reason = 'uses an algorithm that is not accepted';
  else if (err instanceof errors.JWSSignatureVerificationFailed) reason = 'has a bad signature';
  else if (err instanceof errors.JWKSNoMatchingKey) reason = 'was signed by a key the JWKS does not hold';
  else if (err instanceof errors.JWKSTimeout || err instanceof errors.JOSEError)
    reason = `could not be verified (${err.code})`;
  return new BridgeError('unauthorized', `${what} ${reason}`);
}

export interface RestVerifierOptions {
  readonly secret: string | undefined;
  readonly jwksUrl: string | undefined;
}

export type RestVerifier = (authorization: string | undefined) => Promise<Principal>;

/** Verifies the control plane's bearer tokens: HS256 with a secret, or keys from a remote JWKS. */
export function createRestVerifier(options: RestVerifierOptions): RestVerifier {
  const jwks =
    options.jwksUrl === undefined
      ? undefined
      : createRemoteJWKSet(new URL(options.jwksUrl), {
          // A fetch holds the request whose token asked for it: 5 s, well inside the request timeout.
          timeoutDuration: 5_000,
          // A token naming an unknown key refetches the set at most once per 30 s, so a flood of forged
          // key ids cannot make the bridge hammer the key server; a rotated-in key works within 30 s.
          cooldownDuration: 30_000,
          // The set is refetched after 10 min even if every key id is known: a key the issuer withdrew
          // stops verifying within 10 min.
          cacheMaxAge: 10 * 60_000,
        });
  const secret = options.secret === undefined ? undefined : new TextEncoder().encode(options.secret);
  return async (authorization) => {
    const token = bearerToken(authorization);
    if (token === undefined) {
      throw new BridgeError('unauthorized', 'missing bearer token: send "Authorization: Bearer <JWT>"');
    }
    try {
      const { payload } =
        jwks !== undefined
          ? await jwtVerify(token, jwks, { algorithms: JWKS_ALGS })
          : await jwtVerify(token, secret!, { algorithms: HMAC_ALGS });
      return principalOf(payload);
    } catch (err) {
      throw unauthorized(err, 'bearer token');
    }
  };
}

/** 403 unless the principal holds `scope`. */
export function assertScope(principal: Principal, scope: string): void {
  if (!principal.scopes.has(scope)) {
    throw new BridgeError('forbidden', `token lacks the scope "${scope}" this route requires`);
  }
}

/** Looks up a tenant's media secret; undefined when the tenant has none. */
export type SecretLookup = (tenant: string) => Promise<string | undefined>;

export interface MediaClaims {
  readonly tenant: string;
  /** Seconds since the epoch. */
  readonly exp: number;
}

/**
 * Verifies a media endpoint token: HS256 with the tenant's media secret, `exp` required, the tenant
 * taken from the `tenant` claim (absent: `default`).
 */
export async function verifyMediaToken(
  token: string | undefined,
  lookup: SecretLookup,
): Promise<MediaClaims> {
  if (token === undefined || token === '') {
    throw new BridgeError(
      'unauthorized',
      'missing media token: send "Authorization: Bearer <JWT>" or ?token=<JWT>',
    );
  }
  let tenant = DEFAULT_TENANT;
  try {
    const claims = decodeJwt(token);
    if (typeof claims.tenant === 'string' && claims.tenant !== '') tenant = claims.tenant;
  } catch {
    throw new BridgeError('unauthorized', 'media token is not a JWT');
  }
  const secret = await lookup(tenant);
  if (secret === undefined)
    throw new BridgeError('unauthorized', `media token names tenant "${tenant}", which has no media secret`);
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: HMAC_ALGS,
      requiredClaims: ['exp'],
    });
    return { tenant, exp: payload.exp! };
  } catch (err) {
    throw unauthorized(err, 'media token');
  }
}

export interface MintOptions {
  readonly secret: string;
  readonly tenant?: string;
  readonly scopes?: readonly string[];
  readonly ttlSeconds?: number;
  readonly subject?: string;
}

/** Mints an HS256 token (development, tests, the emulator and the load generator). */
export async function mintToken(options: MintOptions): Promise<string> {
  const claims: JWTPayload = {};
  if (options.tenant !== undefined) claims.tenant = options.tenant;
  if (options.scopes !== undefined) claims.scope = options.scopes.join(' ');
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(`${options.ttlSeconds ?? 3600}s`);
  if (options.subject !== undefined) jwt.setSubject(options.subject);
  return jwt.sign(new TextEncoder().encode(options.secret));
}
