import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DOCTOR_WORDS, type DoctorCheck, type DoctorReport } from '../../../shared/contract/doctor';
import type { VmManagerClient } from '../../vm-api/client';
import type { ControlPlane } from '../control-node/control-plane';
import type { HttpOptions } from '../pam/http';
import type { ResolvedTenants } from '../pam/tenants';
import { BUDGETS, type SkytapClient } from '../skytap/client';
import type { SavedSkytap } from '../skytap/saved';
import { check } from './checks';
import { pamProbes } from './pam';
import { controlPlaneProbes, vmProbes } from './platform';
import { skytapProbes } from './skytap';

/**
 * `povdesk doctor` / Settings → Check my accounts (docs/decisions/tests.md, "Third parties in the tests"): every account the
 * app has credentials for is read once, read-only, and each named assumption (./checks.ts) comes
 * back confirmed, contradicted or could not tell. The support bundle is that report plus the
 * diagnostics (versions, settings without secrets, log tails), scrubbed of every known secret.
 */
export interface DoctorDeps {
  skytap: Pick<SavedSkytap, 'config'>;
  skytapClient?: (cfg: Awaited<ReturnType<SavedSkytap['config']>>) => SkytapClient;
  /** each POV's saved BeyondTrust tenants (POVs without any are skipped) */
  tenants: () => Promise<{ povId: string; tenants: ResolvedTenants }[]>;
  /** the remote vm-manager, or null when the Local VMs page uses the local one */
  remoteVm: () => Promise<{ client: VmManagerClient; url: string } | null>;
  /** the control plane, or null when none is configured */
  controlPlane: () => Promise<{ plane: ControlPlane; url: string } | null>;
  diagnostics: () => Promise<string>;
  /** scrubs every secret the core knows from text that leaves */
  scrub: (text: string) => string;
  home: string;
  now?: () => Date;
  http?: HttpOptions;
}

export class DoctorService {
  constructor(private readonly d: DoctorDeps) {}

  async run(): Promise<DoctorReport> {
    const http: HttpOptions = { timeoutMs: 10_000, maxRetries: 1, maxRetryWaitMs: 5_000, ...this.d.http };
    const parts = await Promise.all([
      this.skytap(),
      this.pam(http),
      this.d.remoteVm().then(vmProbes, (e: unknown) => [check('vm.remote-host', 'remote vm-manager', 'unknown', (e as Error).message)]),
      this.d
        .controlPlane()
        .then(controlPlaneProbes, (e: unknown) => [check('control-plane.spire', 'control plane', 'unknown', (e as Error).message)]),
    ]);
    const checks = parts.flat();
    const counts = { confirmed: 0, contradicted: 0, unknown: 0 };
    for (const c of checks) counts[c.result]++;
    return { checkedAt: (this.d.now?.() ?? new Date()).toISOString(), checks, counts };
  }

  private async skytap(): Promise<DoctorCheck[]> {
    let cfg: Awaited<ReturnType<SavedSkytap['config']>>;
    try {
      cfg = await this.d.skytap.config();
    } catch (e) {
      return [check('skytap.account', 'Skytap', 'unknown', (e as Error).message)];
    }
    const { SkytapClient: Client } = await import('../skytap/client');
    const client = this.d.skytapClient?.(cfg) ?? new Client(cfg, { budget: BUDGETS.testConnection, timeoutMs: 15_000 });
    return skytapProbes(client, `Skytap ${cfg.username} at ${client.baseUrl}`);
  }

  private async pam(http: HttpOptions): Promise<DoctorCheck[]> {
    const all = await this.d.tenants();
    // one probe per tenant, however many POVs share it
    const seen = new Set<string>();
    const out: DoctorCheck[] = [];
    const first = (key: string) => {
      const fresh = !seen.has(key);
      seen.add(key);
      return fresh;
    };
    for (const { tenants } of all) {
      const t: ResolvedTenants = {
        ...tenants,
        pra: tenants.pra && first(`pra ${tenants.pra.site}`) ? tenants.pra : null,
        ps: tenants.ps && first(`ps ${tenants.ps.url}`) ? tenants.ps : null,
        entitle: tenants.entitle && first(`entitle ${tenants.entitle.url ?? ''}`) ? tenants.entitle : null,
      };
      out.push(...(await pamProbes(t, http)));
    }
    if (all.length === 0)
      out.push(check('pam.pra-token', 'BeyondTrust', 'unknown', "no POV has BeyondTrust tenants saved (a POV's Access panel)"));
    return out;
  }

  /** A fresh report and the diagnostics, scrubbed, in one text file under <home>/support. */
  async bundle(): Promise<{ path: string; bytes: number; report: DoctorReport }> {
    const report = await this.run();
    const lines = report.checks.map(
      (c) => `[${DOCTOR_WORDS[c.result]}] ${c.id} — ${c.subject}\n  assumed: ${c.assumption} (${c.doc})\n  seen: ${c.seen}`,
    );
    const text = this.d.scrub(
      `POV Desk support bundle, ${report.checkedAt}\n\n== doctor: ${report.counts.confirmed} ` +
        `confirmed, ${report.counts.contradicted} contradicted, ${report.counts.unknown} could not tell\n${lines.join('\n')}\n\n` +
        `== doctor report (JSON)\n${JSON.stringify(report, null, 2)}\n\n${await this.d.diagnostics()}\n`,
    );
    const dir = join(this.d.home, 'support');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, `povdesk-support-${report.checkedAt.replace(/[:.]/g, '-')}.txt`);
    writeFileSync(path, text, { mode: 0o600 });
    return { path, bytes: Buffer.byteLength(text), report };
  }
}
