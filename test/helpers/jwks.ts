/**
 * A JWKS endpoint on loopback and RS256 keys that sign for it (REST tokens from a remote JWKS).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

/** A JWKS endpoint on loopback whose key set the test can swap; counts fetches. */
export async function jwksServer(): Promise<{
  url: string;
  keys: JWK[];
  fetches: () => number;
  close(): Promise<void>;
}> {
  const state = { keys: [] as JWK[], fetches: 0 };
  const server: Server = createServer((_req, res) => {
    state.fetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: state.keys }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    get keys() {
      return state.keys;
    },
    set keys(k: JWK[]) {
      state.keys = k;
    },
    fetches: () => state.fetches,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export async function rsaKey(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
  return { jwk, sign, publicKey };
}
