/**
 * In-memory state for a single instance: the default store.
 */
import type {
  MediaStreamConfig,
  ProviderAuth,
  ProviderAuthPatch,
  ProviderCredential,
  SessionInfo,
  SessionRegistry,
  TenantStore,
} from './types.js';

const key = (tenant: string, sessionId: string): string => `${tenant}\u0000${sessionId}`;

export class MemorySessionRegistry implements SessionRegistry {
  readonly #sessions = new Map<string, SessionInfo>();

  async add(session: SessionInfo): Promise<boolean> {
    const k = key(session.tenant, session.session_id);
    if (this.#sessions.has(k)) return false;
    this.#sessions.set(k, session);
    return true;
  }

  async remove(tenant: string, sessionId: string): Promise<void> {
    this.#sessions.delete(key(tenant, sessionId));
  }

  async get(tenant: string, sessionId: string): Promise<SessionInfo | undefined> {
    return this.#sessions.get(key(tenant, sessionId));
  }

  async list(tenant: string): Promise<SessionInfo[]> {
    const out: SessionInfo[] = [];
    for (const s of this.#sessions.values()) if (s.tenant === tenant) out.push(s);
    return out;
  }

  async setConferenceNumbers(tenant: string, sessionId: string, numbers: readonly string[]): Promise<void> {
    const k = key(tenant, sessionId);
    const s = this.#sessions.get(k);
    if (s !== undefined) this.#sessions.set(k, { ...s, conferenceNumbers: [...numbers] });
  }

  count(): number {
    return this.#sessions.size;
  }
}

export class MemoryTenantStore implements TenantStore {
  readonly #configs = new Map<string, MediaStreamConfig>();
  readonly #secrets = new Map<string, string>();
  readonly #providerAuth = new Map<string, Readonly<Record<string, ProviderCredential>>>();
  readonly #toolSecrets = new Map<string, string>();

  constructor(initialSecrets: Readonly<Record<string, string>> = {}) {
    for (const [tenant, secret] of Object.entries(initialSecrets)) this.#secrets.set(tenant, secret);
  }

  async getMediaStream(tenant: string): Promise<MediaStreamConfig | undefined> {
    return this.#configs.get(tenant);
  }

  async getMediaSecret(tenant: string): Promise<string | undefined> {
    return this.#secrets.get(tenant);
  }

  async getProviderAuth(tenant: string): Promise<ProviderAuth> {
    return this.#providerAuth.get(tenant) ?? {};
  }

  async getToolSecret(tenant: string): Promise<string | undefined> {
    return this.#toolSecrets.get(tenant);
  }

  async putMediaStream(
    config: MediaStreamConfig,
    secret: string | undefined,
    providerAuth?: ProviderAuthPatch,
    toolSecret?: string,
  ): Promise<void> {
    this.#configs.set(config.tenant, config);
    if (secret !== undefined) this.#secrets.set(config.tenant, secret);
    if (toolSecret !== undefined) this.#toolSecrets.set(config.tenant, toolSecret);
    if (providerAuth !== undefined)
      this.#providerAuth.set(config.tenant, applyPatch(this.#providerAuth.get(config.tenant), providerAuth));
  }
}

/** Credentials after a change: each dialect named replaced (or removed with null), the others kept. */
export function applyPatch(
  stored: Readonly<Record<string, ProviderCredential>> | undefined,
  patch: ProviderAuthPatch,
): Readonly<Record<string, ProviderCredential>> {
  const out: Record<string, ProviderCredential> = { ...stored };
  for (const [dialect, cred] of Object.entries(patch)) {
    if (cred === null) delete out[dialect];
    else out[dialect] = cred;
  }
  return out;
}
