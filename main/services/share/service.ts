import { AppError } from '../../../shared/contract/errors';
import type { ShareView } from '../../../shared/contract/share';
import { getPov, listVms, type PovRow } from '../pov/repo';
import { requireCapability } from '../../../shared/lab-platforms';
import type { SecretStore } from '../secrets/store';
import { parseSkytapTime, type PortalAccess, type PublishSet, type ShareSkytapApi } from '../skytap/share-api';
import type { Db } from '../store/db';
import { JOB_KIND } from '../../../shared/contract/job-kinds';
import type { Events } from '../hub';
import { generatePassword, passwordAccount } from './password';
import { getShare, listShares, markShareGone, toShareView, upsertShare, type ShareRow } from './repo';

export interface ShareDeps {
  db: Db;
  secrets: SecretStore;
  skytap: () => Promise<ShareSkytapApi>;
  now?: () => Date;
  /** addSecret: every generated password is redacted from the log before it is used. */
  log?: { addSecret(v: string): void; warn(msg: string, f?: Record<string, unknown>): void };
  /**
   * Emits `pov.changed` when a link is made, moved or taken down (not a job: the POV row's latest
   * expiry follows it), and hears `job.changed` to forget the links of destroyed POVs.
   */
  hub: Events;
}

/** A share link younger than this is not marked gone for missing from a listing (see applyPortals). */
export const PORTAL_GONE_GRACE_MS = 2 * 60_000;

/**
 * Share links: one Skytap sharing portal for the POV's environment, always with a generated
 * password and an expiry no later than the POV's auto-delete time. The password goes to the
 * keychain (keyed by POV and portal) and back to the caller once; it is never written to SQLite,
 * a log line or a job record (these calls are not jobs for that reason).
 */
export class ShareService {
  constructor(private readonly deps: ShareDeps) {
    // A destroy, or a sweep that found the environment gone: its links and their passwords go too.
    deps.hub.on('job.changed', (job) => {
      if (job.state !== 'succeeded' || (job.kind !== JOB_KIND.povDestroy && job.kind !== JOB_KIND.reconcile)) return;
      this.forgetDestroyed().catch((err: unknown) => deps.log?.warn('could not forget share passwords', { error: (err as Error).message }));
    });
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  private pov(povId: string): PovRow & { env_id: string } {
    const r = getPov(this.deps.db, povId);
    if (!r) throw new AppError('not_found', `No POV ${povId}; refresh the POV list.`);
    if (r.env_id === null || r.state === 'destroyed' || r.state === 'destroying') {
      throw new AppError('conflict', `POV "${r.name}" has no live Skytap environment (it is ${r.state}), so it cannot be shared.`);
    }
    return r as PovRow & { env_id: string };
  }

  private share(povId: string, shareId: string): ShareRow {
    const s = getShare(this.deps.db, povId, shareId);
    if (!s) throw new AppError('not_found', `POV ${povId} has no share link ${shareId}; refresh the Share panel.`);
    return s;
  }

  /** The expiry asked for, checked against now and the auto-delete time (refused with the reason). */
  private checkExpiry(r: PovRow, expiresAt: string | undefined): Date {
    const deleteAt = r.auto_delete_at ? new Date(r.auto_delete_at) : null;
    if (!deleteAt) {
      throw new AppError(
        'conflict',
        `POV "${r.name}" has no auto-delete time, and a share link must expire no later than it. Set one (Auto-delete → Change) first.`,
      );
    }
    const at = expiresAt === undefined ? deleteAt : new Date(expiresAt);
    if (at.getTime() <= this.now().getTime()) {
      throw new AppError('invalid_request', `The expiry ${at.toISOString()} is not in the future; pick a later time.`);
    }
    if (at.getTime() > deleteAt.getTime()) {
      throw new AppError(
        'invalid_request',
        `The expiry ${at.toISOString()} is after this POV's auto-delete time ${deleteAt.toISOString()}: the link would outlive ` +
          `the environment. ` +
          'Pick an earlier expiry, or move the auto-delete time first.',
      );
    }
    return at;
  }

  private async view(r: ShareRow): Promise<ShareView> {
    const stored = r.managed === 1 && r.gone_at === null && (await this.deps.secrets.get(passwordAccount(r.pov_id, r.share_id))) !== null;
    return toShareView(r, stored);
  }

  async list(povId: string): Promise<{ shares: ShareView[]; autoDeleteAt: string | null; idleWarning: string | null }> {
    const r = getPov(this.deps.db, povId);
    if (!r) throw new AppError('not_found', `No POV ${povId}; refresh the POV list.`);
    const shares = await Promise.all(listShares(this.deps.db, povId).map((s) => this.view(s)));
    return { shares, autoDeleteAt: r.auto_delete_at ?? null, idleWarning: idleWarning(r) };
  }

  async create(input: {
    povId: string;
    expiresAt?: string;
    vmIds?: string[];
    access?: PortalAccess;
    runtimeLimitMinutes?: number;
  }): Promise<{ share: ShareView; password: string }> {
    const r = this.pov(input.povId);
    requireCapability(r.platform, 'publishSets');
    const expiresAt = this.checkExpiry(r, input.expiresAt);
    const known = listVms(this.deps.db, r.id).filter((v) => v.gone_at === null);
    let vmIds = input.vmIds ?? known.map((v) => v.vm_id);
    vmIds = [...new Set(vmIds)];
    const unknown = vmIds.filter((id) => !known.some((v) => v.vm_id === id));
    if (unknown.length) {
      throw new AppError('invalid_request', `VM(s) ${unknown.join(', ')} are not in POV "${r.name}"; press Refresh VMs and pick again.`);
    }
    if (vmIds.length === 0) throw new AppError('conflict', `POV "${r.name}" has no VMs recorded; press Refresh VMs first.`);
    const password = generatePassword();
    this.deps.log?.addSecret(password);
    const api = await this.deps.skytap();
    let portal: PublishSet;
    try {
      portal = await api.createPublishSet(r.env_id, {
        name: `${r.name.slice(0, 80)} – customer access`,
        vmIds,
        access: input.access ?? 'run_and_use',
        password,
        expiresAt,
        runtimeLimitMinutes: input.runtimeLimitMinutes ?? null,
      });
    } catch (err) {
      throw portalError(err);
    }
    try {
      await this.deps.secrets.set(passwordAccount(r.id, portal.id), password);
    } catch (err) {
      // A link whose password nobody kept is useless: take it down again, then say why.
      await api.deletePublishSet(r.env_id, portal.id).catch(() => undefined);
      throw new AppError(
        'unavailable',
        `The keychain refused to store the share link's password (${(err as Error).message}); the link was removed again. Unlock ` +
          `the keychain and retry.`,
      );
    }
    const at = this.now().toISOString();
    const row = rowFromPortal(r.id, portal, { managed: true, at, vmIds, access: input.access ?? 'run_and_use', expiresAt });
    upsertShare(this.deps.db, row);
    this.deps.hub.emit('pov.changed', { povId: r.id });
    return { share: toShareView(row, true), password };
  }

  async password(povId: string, shareId: string): Promise<string> {
    const s = this.share(povId, shareId);
    const pw = s.managed === 1 ? await this.deps.secrets.get(passwordAccount(povId, shareId)) : null;
    if (pw === null) {
      throw new AppError(
        'not_found',
        s.managed === 1
          ? 'The keychain has no password for this link (Skytap never shows it back). Press Rotate to set a new one.'
          : 'This link was created outside POV Desk, so its password is not kept here. Rotate gives it one POV Desk knows.',
      );
    }
    return pw;
  }

  async extend(povId: string, shareId: string, expiresAt: string): Promise<ShareView> {
    const r = this.pov(povId);
    const s = this.live(povId, shareId);
    const at = this.checkExpiry(r, expiresAt);
    const api = await this.deps.skytap();
    const portal = await api.updatePublishSet(r.env_id, shareId, { expiresAt: at }).catch((err: unknown) => {
      throw portalError(err);
    });
    const row = rowFromPortal(povId, portal, { managed: s.managed === 1, at: this.now().toISOString(), prev: s, expiresAt: at });
    upsertShare(this.deps.db, row);
    this.deps.hub.emit('pov.changed', { povId });
    return this.view(row);
  }

  async rotatePassword(povId: string, shareId: string): Promise<{ share: ShareView; password: string }> {
    const r = this.pov(povId);
    const s = this.live(povId, shareId);
    const password = generatePassword();
    this.deps.log?.addSecret(password);
    const api = await this.deps.skytap();
    const portal = await api.updatePublishSet(r.env_id, shareId, { password }).catch((err: unknown) => {
      throw portalError(err);
    });
    await this.deps.secrets.set(passwordAccount(povId, shareId), password);
    // Rotating adopts a portal made outside the app: its password is now known here.
    const row = rowFromPortal(povId, portal, { managed: true, at: this.now().toISOString(), prev: s });
    upsertShare(this.deps.db, row);
    return { share: toShareView(row, true), password };
  }

  /** DELETE the portal; a portal Skytap no longer has (404) is revoked all the same. */
  async revoke(povId: string, shareId: string): Promise<'deleted' | 'already_gone'> {
    const s = this.share(povId, shareId);
    const r = getPov(this.deps.db, povId)!;
    let outcome: 'deleted' | 'already_gone' = 'already_gone';
    if (s.gone_at === null && r.env_id !== null && r.state !== 'destroyed') {
      const api = await this.deps.skytap();
      outcome = await api.deletePublishSet(r.env_id, shareId).catch((err: unknown) => {
        // The environment itself is gone: so is the portal.
        if ((err as AppError).code === 'not_found') return 'already_gone' as const;
        throw portalError(err);
      });
    }
    markShareGone(this.deps.db, povId, shareId, this.now().toISOString());
    this.deps.hub.emit('pov.changed', { povId });
    await this.deps.secrets.delete(passwordAccount(povId, shareId));
    return outcome;
  }

  /** Every live link of the POV expiring after `at` is moved to `at` (auto-delete moved earlier). */
  async clampTo(povId: string, at: Date): Promise<number> {
    const r = this.pov(povId);
    const late = listShares(this.deps.db, povId).filter((s) => s.gone_at === null && s.expires_at !== null && new Date(s.expires_at) > at);
    if (!late.length) return 0;
    const api = await this.deps.skytap();
    for (const s of late) {
      const portal = await api.updatePublishSet(r.env_id, s.share_id, { expiresAt: at });
      upsertShare(
        this.deps.db,
        rowFromPortal(povId, portal, { managed: s.managed === 1, at: this.now().toISOString(), prev: s, expiresAt: at }),
      );
    }
    return late.length;
  }

  /**
   * The sweep's view of one environment's portals (from the environment body, no extra request):
   * new ones are recorded as not managed here, missing ones are marked gone and their passwords
   * leave the keychain (a portal deleted in Skytap's UI while the POV lives on).
   */
  async applyPortals(povId: string, portals: PublishSet[]): Promise<{ added: number; gone: number }> {
    const now = this.now();
    const at = now.toISOString();
    const rows = listShares(this.deps.db, povId);
    // A link made while the listing was on its way is not in it: the next sweep judges it.
    const judged = (s: ShareRow) => now.getTime() - new Date(s.created_at).getTime() >= PORTAL_GONE_GRACE_MS;
    const gone = rows.filter((s) => s.gone_at === null && judged(s) && !portals.some((p) => p.id === s.share_id));
    // The passwords first: a keychain that fails leaves the links live, so the next sweep tries again.
    for (const s of gone) await this.deps.secrets.delete(passwordAccount(povId, s.share_id));
    let added = 0;
    this.deps.db.transaction(() => {
      for (const p of portals) {
        const prev = rows.find((x) => x.share_id === p.id);
        if (!prev) added++;
        upsertShare(this.deps.db, rowFromPortal(povId, p, { managed: prev ? prev.managed === 1 : false, at, ...(prev ? { prev } : {}) }));
      }
      for (const s of gone) markShareGone(this.deps.db, povId, s.share_id, at);
    })();
    return { added, gone: gone.length };
  }

  /**
   * Links of POVs whose environment is gone (destroyed here, or reaped by the schedule) are gone
   * too: marked so, and their passwords leave the keychain. Returns how many.
   */
  async forgetDestroyed(): Promise<number> {
    const rows = this.deps.db
      .prepare("SELECT s.* FROM pov_shares s JOIN povs p ON p.id = s.pov_id WHERE p.state = 'destroyed' AND s.gone_at IS NULL")
      .all() as ShareRow[];
    const at = this.now().toISOString();
    for (const s of rows) {
      markShareGone(this.deps.db, s.pov_id, s.share_id, at);
      await this.deps.secrets.delete(passwordAccount(s.pov_id, s.share_id));
    }
    return rows.length;
  }

  private live(povId: string, shareId: string): ShareRow {
    const s = this.share(povId, shareId);
    if (s.gone_at !== null) throw new AppError('conflict', `Share link ${shareId} is gone (since ${s.gone_at}); create a new one.`);
    return s;
  }
}

/**
 * Skytap does not count traffic through published services or a gateway as activity: a POV the
 * customer reaches through its POV Gateway (an enrolled control node) with suspend_on_idle set can
 * be suspended in the middle of a demo.
 */
export function idleWarning(r: PovRow): string | null {
  if (!r.suspend_on_idle || r.control_node_status !== 'enrolled') return null;
  const min = Math.round(r.suspend_on_idle / 60);
  return (
    `This environment suspends after ${min} min idle, and traffic through the POV Gateway does not count as activity in Skytap: ` +
    'a customer working only through the gateway can be suspended mid-demo. Turn idle suspend off in Skytap for the evaluation, ' +
    'or keep the portal open.'
  );
}

/** A row from what Skytap answered; fields Skytap left out keep what we knew. */
function rowFromPortal(
  povId: string,
  p: PublishSet,
  o: { managed: boolean; at: string; prev?: ShareRow; vmIds?: string[]; access?: string; expiresAt?: Date },
): ShareRow {
  const vmIds = p.vms.length
    ? p.vms.map((v) => v.id ?? v.vm_ref?.split('/').pop() ?? '').filter(Boolean)
    : (o.vmIds ?? JSON.parse(o.prev?.vm_ids ?? '[]'));
  const read = parseSkytapTime(p.expiration_date);
  return {
    pov_id: povId,
    share_id: p.id,
    name: p.name ?? o.prev?.name ?? `Sharing portal ${p.id}`,
    url: p.desktops_url ?? o.prev?.url ?? null,
    access: p.vms[0]?.access ?? o.access ?? o.prev?.access ?? null,
    vm_ids: JSON.stringify(vmIds),
    expires_at: (read ?? o.expiresAt)?.toISOString() ?? o.prev?.expires_at ?? null,
    runtime_limit_minutes: p.runtime_limit ?? o.prev?.runtime_limit_minutes ?? null,
    runtime_left_seconds: p.runtime_left_in_seconds ?? null,
    managed: o.managed ? 1 : 0,
    gone_at: null,
    created_at: o.prev?.created_at ?? o.at,
    updated_at: o.at,
  };
}

/** Skytap's refusals of a portal in words that say what to do. */
function portalError(err: unknown): unknown {
  const e = err as AppError;
  if (e?.code === 'forbidden') {
    return new AppError(
      'forbidden',
      `Skytap refused the sharing portal: ${e.message} An administrator of the Skytap account can enable sharing portals (or IP ` +
        `access policies may block them); ask them, then try again.`,
      e.detail,
    );
  }
  if (e?.code === 'conflict') {
    return new AppError(
      'conflict',
      `Skytap refused the sharing portal's settings (409): ${e.message} Use the access "use" or "run and use".`,
      e.detail,
    );
  }
  return err;
}
