import type { Db } from '../store/db';
import { keyTypeOf, sha256Fingerprint } from './fingerprint';

export interface KnownHost {
  host: string;
  port: number;
  keyType: string;
  keyBase64: string;
  fingerprint: string;
  addedAt: string;
}

export type HostKeyVerdict =
  | { kind: 'match'; stored: KnownHost }
  | { kind: 'unknown'; presented: { keyType: string; fingerprint: string } }
  | { kind: 'changed'; stored: KnownHost; presented: { keyType: string; fingerprint: string } };

interface Row {
  host: string;
  port: number;
  key_type: string;
  key_base64: string;
  fingerprint: string;
  added_at: string;
}

const toKnown = (r: Row): KnownHost => ({
  host: r.host,
  port: r.port,
  keyType: r.key_type,
  keyBase64: r.key_base64,
  fingerprint: r.fingerprint,
  addedAt: r.added_at,
});

/** Host names compare case-insensitively, like OpenSSH's known_hosts. */
export const normalHost = (host: string) => host.trim().toLowerCase();

/** Accepted host keys, one per host:port, in SQLite. */
export class KnownHosts {
  constructor(private readonly db: Db) {}

  list(): KnownHost[] {
    return (this.db.prepare('SELECT * FROM ssh_known_hosts ORDER BY host, port').all() as Row[]).map(toKnown);
  }

  get(host: string, port: number): KnownHost | null {
    const r = this.db.prepare('SELECT * FROM ssh_known_hosts WHERE host = ? AND port = ?').get(normalHost(host), port) as Row | undefined;
    return r ? toKnown(r) : null;
  }

  check(host: string, port: number, keyBlob: Buffer): HostKeyVerdict {
    const presented = { keyType: keyTypeOf(keyBlob), fingerprint: sha256Fingerprint(keyBlob) };
    const stored = this.get(host, port);
    if (!stored) return { kind: 'unknown', presented };
    if (stored.keyBase64 === keyBlob.toString('base64')) return { kind: 'match', stored };
    return { kind: 'changed', stored, presented };
  }

  /** Stores (or, when the user chose to replace, overwrites) the key for host:port. */
  put(host: string, port: number, keyBlob: Buffer, now = new Date()): KnownHost {
    const row: Row = {
      host: normalHost(host),
      port,
      key_type: keyTypeOf(keyBlob),
      key_base64: keyBlob.toString('base64'),
      fingerprint: sha256Fingerprint(keyBlob),
      added_at: now.toISOString(),
    };
    this.db
      .prepare(
        `INSERT INTO ssh_known_hosts (host, port, key_type, key_base64, fingerprint, added_at)
         VALUES (@host, @port, @key_type, @key_base64, @fingerprint, @added_at)
         ON CONFLICT (host, port) DO UPDATE SET key_type = excluded.key_type, key_base64 = excluded.key_base64,
           fingerprint = excluded.fingerprint, added_at = excluded.added_at`,
      )
      .run(row);
    return toKnown(row);
  }

  remove(host: string, port: number): boolean {
    return this.db.prepare('DELETE FROM ssh_known_hosts WHERE host = ? AND port = ?').run(normalHost(host), port).changes > 0;
  }
}
