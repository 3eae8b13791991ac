import type { JobRecord } from '../../../shared/contract';
import type { PamStatus } from '../../../shared/contract/pam';
import type { PovView } from '../../../shared/contract/pov';
import type { PovReadiness, ReadinessItem, ReadinessItemKey, ReadinessLevel } from '../../../shared/contract/readiness';
import type { ShareView } from '../../../shared/contract/share';
import { capabilitiesOf, type Feature } from '../../../shared/lab-platforms';
import { RECONCILE_INTERVAL_MS } from './reconcile';

/** A runstate older than two sweeps is no longer "confirmed recently". */
export const FRESH_MS = 2 * RECONCILE_INTERVAL_MS;
/** The demo horizon: a share link must outlast it, and auto-delete must not fall inside it. */
export const DEMO_HORIZON_MS = 24 * 3600_000;

export interface ReadinessFacts {
  pov: PovView;
  /** null: no BeyondTrust tenant is saved for this POV. */
  pam: PamStatus | null;
  shares: ShareView[];
  /** The POV's jobs (subject = its id), any order. */
  jobs: JobRecord[];
}

const LABELS: Record<ReadinessItemKey, string> = {
  environment: 'Environment running',
  controlNode: 'Control node enrolled',
  gateway: 'POV Gateway and VMs wired',
  share: 'Share link valid past the demo',
  autoDelete: 'Auto-delete armed, not within 24 h',
  jobs: 'No job failed since its last success',
};

function ms(at: string | null | undefined): number | null {
  if (!at) return null;
  const t = Date.parse(at);
  return Number.isNaN(t) ? null : t;
}

function hoursText(deltaMs: number): string {
  const h = deltaMs / 3600_000;
  return h < 1 ? `${Math.max(0, Math.round(deltaMs / 60_000))} min` : h < 48 ? `${Math.round(h)} h` : `${Math.round(h / 24)} d`;
}

type Draft = Omit<ReadinessItem, 'key' | 'label' | 'ageSeconds'>;
const act = (label: string, method: string | null = null) => ({ label, method });

function environment(p: PovView, now: number): Draft {
  const asOf = p.lastConfirmedAt;
  if (p.state !== 'active' || p.envId === null) {
    const why = p.state === 'failed' ? `the POV failed${p.errorMessage ? `: ${p.errorMessage}` : ''}` : `the POV is ${p.state}`;
    return {
      state: 'not_ready',
      detail: `No usable environment: ${why}.`,
      asOf,
      action:
        p.state === 'failed' ? act('Destroy it and create the POV again', 'pov.destroy') : act('Wait for the POV to finish provisioning'),
    };
  }
  if (p.runstate !== 'running') {
    return {
      state: 'not_ready',
      detail: `The environment was last confirmed ${p.runstate ?? 'in an unknown state'}, not running.`,
      asOf,
      action: act('Start the environment', 'pov.start'),
    };
  }
  const t = ms(asOf);
  if (t === null || now - t > FRESH_MS) {
    const age = t === null ? 'never' : `${hoursText(now - t)} ago`;
    const where = p.platform === 'skytap' ? 'Skytap may have suspended it since' : 'it may have stopped since';
    return {
      state: 'attention',
      detail: `Running, but last confirmed ${age}: ${where}.`,
      asOf,
      action: act('Refresh (run a reconcile)', 'reconcile.runNow'),
    };
  }
  return { state: 'ok', detail: 'Running, confirmed recently.', asOf, action: null };
}

function controlNode(p: PovView): Draft {
  const c = p.controlNode;
  const asOf = p.updatedAt;
  const name = c.vm ?? c.name ?? 'the control node';
  switch (c.status) {
    case 'enrolled':
      return { state: 'ok', detail: `${name} enrolled${c.mode ? ` (${c.mode})` : ''}.`, asOf, action: null };
    case 'installing':
    case 'waiting':
      return {
        state: 'attention',
        detail: `The agent on ${name} is ${c.status}${c.reason ? `: ${c.reason}` : ''}.`,
        asOf,
        action: act('Wait for the install job (see Jobs)'),
      };
    case 'none':
      return {
        state: 'not_ready',
        detail: c.reason ?? 'No VM can be the control node.',
        asOf,
        action: act('Name the control node VM', 'pov.setControlNodeName'),
      };
    case 'not_set_up':
      // An optional outside service the SE has not set up: neutral, with how to add it.
      return {
        state: 'not_configured',
        detail:
          `Not set up: ${c.reason ?? 'Settings → Control node is incomplete'}. The POV works without it; it is what enrols ${name} ` +
          `with the control plane.`,
        asOf,
        action: act('To add one: complete Settings → Control node, then press Install control node', 'controlNode.saveSettings'),
      };
    default: {
      const what = c.status === null ? 'No agent is installed' : `The install ${c.status}${c.reason ? `: ${c.reason}` : ''}`;
      return {
        state: 'not_ready',
        detail: `${what} (control node: ${name}).`,
        asOf,
        action: act('Install the control node', 'pov.installControlNode'),
      };
    }
  }
}

const wired = (s: string) => s === 'done' || s === 'skipped';

function gateway(pam: PamStatus | null): Draft {
  if (!pam || (!pam.tenants.pra && !pam.tenants.passwordSafe && !pam.tenants.entitle)) {
    return {
      state: 'not_configured',
      detail: 'No BeyondTrust tenant is saved for this POV: access through BeyondTrust is not set up (optional).',
      asOf: null,
      action: act('To add it: save the tenants in Access (BeyondTrust) on this page', 'pam.saveTenants'),
    };
  }
  const asOf = pam.lastRun?.at ?? null;
  if (pam.jobId) return { state: 'attention', detail: 'A wiring job is running.', asOf, action: act('Wait for the wiring job (see Jobs)') };
  const rewire = act('Wire the POV again', 'pam.wire');
  if (!pam.gateway.connected) {
    const why = pam.gateway.error ?? (pam.gateway.state === 'done' ? 'it was deployed but is not connected' : `it is ${pam.gateway.state}`);
    return { state: 'not_ready', detail: `The POV Gateway is not connected: ${why}.`, asOf, action: rewire };
  }
  const loose = pam.vms.filter((v) => !wired(v.jumpItem.state) || !wired(v.passwordSafe.state));
  if (loose.length) {
    const names = loose.map((v) => v.name).join(', ');
    return { state: 'not_ready', detail: `${loose.length} of ${pam.vms.length} VM(s) not wired: ${names}.`, asOf, action: rewire };
  }
  return {
    state: 'ok',
    detail: `Gateway connected${pam.gateway.node ? ` (${pam.gateway.node})` : ''}; all ${pam.vms.length} VM(s) wired.`,
    asOf,
    action: null,
  };
}

function liveShares(shares: ShareView[]): ShareView[] {
  return shares.filter((s) => s.goneAt === null && s.url !== null);
}

/** The live link that lasts longest (no expiry counts as longest). */
function longest(shares: ShareView[]): ShareView | null {
  return [...liveShares(shares)].sort((a, b) => (ms(b.expiresAt) ?? Infinity) - (ms(a.expiresAt) ?? Infinity))[0] ?? null;
}

export function latestExpiry(shares: ShareView[]): string | null {
  return longest(shares)?.expiresAt ?? null;
}

function share(shares: ShareView[], p: PovView, now: number): Draft {
  const best = longest(shares);
  if (!best)
    return {
      state: 'not_ready',
      detail: 'No live share link: the customer has nothing to open.',
      asOf: null,
      action: act('Create a share link', 'share.create'),
    };
  const exp = ms(best.expiresAt);
  const deleteAt = ms(p.autoDelete?.at);
  // A link may never outlive the environment, so one that lasts until auto-delete is as good as it gets.
  if (exp === null || exp - now >= DEMO_HORIZON_MS || (deleteAt !== null && exp >= deleteAt)) {
    return {
      state: 'ok',
      detail:
        exp === null
          ? 'A share link with no expiry is live.'
          : `A share link is valid until ${best.expiresAt} (${hoursText(exp - now)} left).`,
      asOf: best.createdAt,
      action: null,
    };
  }
  if (exp <= now)
    return {
      state: 'not_ready',
      detail: `Every share link has expired (the last at ${best.expiresAt}).`,
      asOf: best.createdAt,
      action: act('Extend the share link', 'share.extend'),
    };
  return {
    state: 'attention',
    detail: `The share link expires in ${hoursText(exp - now)} (${best.expiresAt}), inside the next 24 h.`,
    asOf: best.createdAt,
    action: act('Extend the share link', 'share.extend'),
  };
}

function autoDelete(p: PovView, now: number): Draft {
  const a = p.autoDelete;
  const at = ms(a?.at);
  const move = act('Move the auto-delete time', 'pov.setAutoDelete');
  if (!a || at === null)
    return {
      state: 'attention',
      detail: 'No auto-delete time is set: the environment runs (and costs) until someone deletes it.',
      asOf: null,
      action: move,
    };
  if (at <= now)
    return {
      state: 'not_ready',
      detail: `The auto-delete time ${a.at} has passed: Skytap deletes (or deleted) the environment.`,
      asOf: null,
      action: move,
    };
  if (a.status !== 'armed') {
    return {
      state: 'attention',
      detail: `Auto-delete is ${a.status === 'pending' ? 'not confirmed yet' : 'not armed'}${a.reason ? `: ${a.reason}` : ''}.`,
      asOf: null,
      action: move,
    };
  }
  if (at - now < DEMO_HORIZON_MS)
    return { state: 'attention', detail: `Skytap deletes the environment in ${hoursText(at - now)} (${a.at}).`, asOf: null, action: move };
  return { state: 'ok', detail: `Armed for ${a.at} (in ${hoursText(at - now)}).`, asOf: null, action: null };
}

/** Per kind of job, the latest that finished succeeded or failed; a failed one is a loose end. */
function jobs(list: JobRecord[]): Draft {
  const last = new Map<string, JobRecord>();
  for (const j of list) {
    if (j.state !== 'succeeded' && j.state !== 'failed') continue;
    const t = ms(j.finishedAt ?? j.createdAt) ?? 0;
    const seen = last.get(j.kind);
    if (!seen || t > (ms(seen.finishedAt ?? seen.createdAt) ?? 0)) last.set(j.kind, j);
  }
  const failed = [...last.values()].filter((j) => j.state === 'failed').sort((a, b) => (ms(b.finishedAt) ?? 0) - (ms(a.finishedAt) ?? 0));
  if (failed.length) {
    const j = failed[0]!;
    const more = failed.length > 1 ? ` (and ${failed.length - 1} more)` : '';
    const why = j.error?.message ? `: ${j.error.message}` : '';
    return {
      state: 'attention',
      detail: `"${j.title}" failed${why}${more}.`,
      asOf: j.finishedAt,
      action: act('Open the job in Jobs and run it again'),
    };
  }
  return {
    state: 'ok',
    detail: last.size ? 'Every kind of job last succeeded.' : 'No job has run for this POV yet.',
    asOf: null,
    action: null,
  };
}

/** not_configured ranks with ok: an optional service nobody set up never lowers the badge. */
const RANK: Record<ReadinessItem['state'], number> = { ok: 0, not_configured: 0, attention: 1, not_ready: 2 };

/** The short names the summary lists after "not configured:". */
const SHORT: Partial<Record<ReadinessItemKey, string>> = { controlNode: 'control node', gateway: 'BeyondTrust' };

function readySummary(platform: string, items: ReadinessItem[]): string {
  const head = platform === 'local' ? 'Ready to rehearse' : 'Ready for the customer';
  const missing = items.filter((i) => i.state === 'not_configured').map((i) => SHORT[i.key] ?? i.label);
  return missing.length ? `${head} (not configured: ${missing.join(', ')}).` : `${head}.`;
}

/**
 * Items that rest on a platform feature: a POV on a platform without it (a local POV has no share
 * links and no auto-delete timer) leaves the item out rather than failing it forever.
 */
const NEEDS: Partial<Record<ReadinessItemKey, Feature>> = { share: 'publishSets', autoDelete: 'schedules' };

function applies(platform: string, key: ReadinessItemKey): boolean {
  const feature = NEEDS[key];
  return !feature || capabilitiesOf(platform).features[feature].supported;
}

/** The checklist and badge for one POV at `now`; pure, so every item can be flipped in a test. */
export function assessReadiness(f: ReadinessFacts, now: Date): PovReadiness {
  const t = now.getTime();
  const drafts: Record<ReadinessItemKey, Draft> = {
    environment: environment(f.pov, t),
    controlNode: controlNode(f.pov),
    gateway: gateway(f.pam),
    share: share(f.shares, f.pov, t),
    autoDelete: autoDelete(f.pov, t),
    jobs: jobs(f.jobs),
  };
  const keys = (Object.keys(drafts) as ReadinessItemKey[]).filter((key) => applies(f.pov.platform, key));
  const items: ReadinessItem[] = keys.map((key) => {
    const d = drafts[key];
    const at = ms(d.asOf);
    return { key, label: LABELS[key], ...d, ageSeconds: at === null ? null : Math.max(0, Math.round((t - at) / 1000)) };
  });
  const worst = items.reduce((w, i) => (RANK[i.state] > RANK[w.state] ? i : w), items[0]!);
  const overall: ReadinessLevel = worst.state === 'attention' || worst.state === 'not_ready' ? worst.state : 'ready';
  return {
    povId: f.pov.id,
    overall,
    summary: overall === 'ready' ? readySummary(f.pov.platform, items) : worst.detail,
    checkedAt: now.toISOString(),
    items,
  };
}

export interface ReadinessDeps {
  pov: (id: string) => PovView;
  pam: (id: string) => Promise<PamStatus | null>;
  shares: (id: string) => ShareView[];
  jobs: (id: string) => JobRecord[];
  now?: () => Date;
}

/** Gathers the facts from the services that own them and assesses them with the clock. */
export class ReadinessService {
  constructor(private readonly d: ReadinessDeps) {}

  async of(id: string, pov = this.d.pov(id)): Promise<PovReadiness> {
    const pam = await this.d.pam(id);
    return assessReadiness({ pov, pam, shares: this.d.shares(id), jobs: this.d.jobs(id) }, this.d.now?.() ?? new Date());
  }

  /** The badge of every POV in a list, for pov.list (one request for the whole list). */
  async badges(povs: PovView[]): Promise<PovView[]> {
    return Promise.all(
      povs.map(async (p) => {
        if (p.state === 'destroyed') return p;
        const r = await this.of(p.id, p);
        return { ...p, readiness: { overall: r.overall, summary: r.summary, shareExpiresAt: latestExpiry(this.d.shares(p.id)) } };
      }),
    );
  }
}
