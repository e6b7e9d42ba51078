/**
 * What the provider emulator remembers: each tenant's media stream (with its write-only secret) and the
 * live sessions it will take call control for, with their conference members and dials in progress.
 */
import type { ProviderMediaStreamConfig, ProviderSession } from '../provider/types.js';

export interface StoredStream {
  readonly config: ProviderMediaStreamConfig;
  readonly secret: string | undefined;
}

export interface EmulatorSession {
  readonly tenant: string;
  readonly session_id: string;
  readonly customer_phone: string;
  readonly direction: 'inbound' | 'outbound';
  readonly started_at: string;
  /** Members in the order they joined. */
  readonly conference: string[];
  /** Numbers being dialled into the conference right now. */
  readonly dialling: Set<string>;
  consulting: boolean;
  /** Placed by the emulator (POST /emulator/calls), as opposed to adopted from the bridge or on demand. */
  readonly placed: boolean;
}

/** A session the emulator did not place but may learn of (from the bridge it runs beside). */
export interface ExternalSession {
  readonly customer_phone?: string | undefined;
  readonly direction?: 'inbound' | 'outbound' | undefined;
  readonly started_at?: string | undefined;
}

export type ExternalSessionLookup = (
  tenant: string,
  sessionId: string,
) => Promise<ExternalSession | undefined>;

const key = (tenant: string, id: string): string => `${tenant}\u0000${id}`;

export class EmulatorState {
  readonly #streams = new Map<string, StoredStream>();
  readonly #sessions = new Map<string, EmulatorSession>();

  getStream(tenant: string): StoredStream | undefined {
    return this.#streams.get(tenant);
  }

  putStream(tenant: string, config: ProviderMediaStreamConfig, secret: string | undefined): StoredStream {
    const stored = { config, secret: secret ?? this.#streams.get(tenant)?.secret };
    this.#streams.set(tenant, stored);
    return stored;
  }

  addSession(s: Omit<EmulatorSession, 'conference' | 'dialling' | 'consulting'>): EmulatorSession {
    const session: EmulatorSession = { ...s, conference: [], dialling: new Set(), consulting: false };
    this.#sessions.set(key(s.tenant, s.session_id), session);
    return session;
  }

  getSession(tenant: string, id: string): EmulatorSession | undefined {
    return this.#sessions.get(key(tenant, id));
  }

  removeSession(tenant: string, id: string): void {
    this.#sessions.delete(key(tenant, id));
  }

  listSessions(tenant: string): EmulatorSession[] {
    return [...this.#sessions.values()].filter((s) => s.tenant === tenant);
  }
}

/** The provider's Session shape of an emulator session. */
export function sessionView(s: EmulatorSession): ProviderSession {
  return {
    session_id: s.session_id,
    customer_phone: s.customer_phone,
    direction: s.direction,
    started_at: s.started_at,
    conferenceNumbers: [...s.conference],
  };
}
