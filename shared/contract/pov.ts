import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { controlNodeSummary } from './control-node';
import { jobStarted, method, stream, lazyMethods } from './define';
import { povReadiness, readinessLevel } from './readiness';
import { OS_VALUES } from './values';

export { OS_VALUES };

export const POV_STATES = ['provisioning', 'active', 'failed', 'destroying', 'destroyed'] as const;
export const povState = lazySchema(() => z.enum(POV_STATES));
export type PovState = z.infer<typeof povState>;

export const osValue = lazySchema(() => z.enum(OS_VALUES));
export type OsValue = z.infer<typeof osValue>;

const id = lazySchema(() => z.string().trim().min(1).max(200));

/** True when Intl knows the zone (what the renderer and the handout format with). */
export function isIanaTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The zone's canonical spelling ("europe/berlin" → "Europe/Berlin", "US/Eastern" → "America/New_York"). */
export function canonicalTimeZone(tz: string): string {
  return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
}

/** The customer's time zone: an IANA name. Offsets ("+01:00") and blanks are refused. */
export const ianaTimeZone = lazySchema(() =>
  z
    .string()
    .trim()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/, 'must be an IANA time zone such as America/New_York')
    .refine(isIanaTimeZone, 'is not a time zone this system knows; use an IANA name such as America/New_York or Europe/Berlin'),
);

export const povActions = lazySchema(() =>
  z.strictObject({ start: z.boolean(), suspend: z.boolean(), destroy: z.boolean(), refreshVms: z.boolean() }),
);
export type PovActions = z.infer<typeof povActions>;

export const povView = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    name: z.string(),
    platform: z.string(),
    templateId: z.string(),
    templateName: z.string(),
    envId: z.string().nullable(),
    state: povState,
    /** Skytap's runstate as last CONFIRMED by a read (see lastConfirmedAt); never a live value. */
    runstate: z.string().nullable(),
    rateLimited: z.boolean(),
    errorMessage: z.string().nullable(),
    lastConfirmedAt: z.string().nullable(),
    envGoneAt: z.string().nullable(),
    /** controlNode.get's summary without the resolution, plus what the POV list shows. */
    controlNode: controlNodeSummary.omit({ resolvedVm: true }).extend({
      /** The name of the VM at vmId (the Control node column shows it). Always set by the handlers. */
      vm: z.string().nullable().optional(),
      /** The control-node install job running for this POV, if any. */
      jobId: z.string().nullable().optional(),
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
    /** The lifecycle job running for this POV in this process, if any. */
    activeJobId: z.string().nullable(),
    actions: povActions,
    /** Auto-delete: the time, whether Skytap's schedule enforces it, and the next ladder warning. */
    autoDelete: z
      .strictObject({
        at: z.string().nullable(),
        /** armed: a delete_at_end schedule ends at `at`; not_armed: the sweep found none (or another end). */
        status: z.enum(['armed', 'not_armed', 'pending']).nullable(),
        reason: z.string().nullable(),
        scheduleId: z.string().nullable(),
        nextWarning: z.strictObject({ step: z.string(), at: z.string() }).nullable(),
        /** The last ladder step that fired for this deletion time (shown on the POV row). */
        lastWarning: z.string().nullable(),
      })
      .optional(),
    /** The customer's IANA time zone (null: not given); times are shown in it beside the SE's. */
    customerTz: z.string().nullable().optional(),
    /** Local POVs: whether the VMs may reach the outside through this machine (off by default). */
    internetAccess: z.boolean().optional(),
    /** Local POVs: when "Save clean state" last saved every VM (null: never). */
    cleanSnapshotAt: z.string().nullable().optional(),
    /** The readiness badge (pov.list fills it; pov.readiness gives the checklist). */
    readiness: z
      .strictObject({
        overall: readinessLevel,
        summary: z.string(),
        /** The latest expiry among the POV's live share links (null: no live link). */
        shareExpiresAt: z.string().nullable(),
      })
      .optional(),
  }),
);
export type PovView = z.infer<typeof povView>;

export const povVmView = lazySchema(() =>
  z.strictObject({
    vmId: z.string(),
    name: z.string(),
    /** What Skytap's hardware.guestOS says, mapped; blank or unrecognised is unknown. */
    osPlatform: osValue,
    /** The user's choice; null when not set. Survives every refresh. */
    osOverride: osValue.nullable(),
    /** osOverride when set, else osPlatform. */
    os: osValue,
    guestOs: z.string().nullable(),
    ip: z.string().nullable(),
    hostname: z.string().nullable(),
    runstate: z.string().nullable(),
    goneAt: z.string().nullable(),
    /** The network the platform reports for the VM (Skytap: from its interfaces); null when none is reported. */
    network: z.strictObject({ name: z.string().nullable(), type: z.enum(['automatic', 'manual']).nullable() }).nullable(),
    /**
     * Published services: a guest port Skytap NATs to a public host:port. Shown, never used for
     * wiring (a published address changes per environment and per power cycle).
     */
    published: z.array(z.strictObject({ internalPort: z.number().int(), externalHost: z.string(), externalPort: z.number().int() })),
  }),
);
export type PovVmView = z.infer<typeof povVmView>;

/**
 * Which actions the CONFIRMED state allows. The handlers refuse (conflict) what this says no to,
 * and the UI greys the same buttons, so both read one rule.
 */
export function povActionsFor(p: {
  state: PovState;
  runstate: string | null;
  envId: string | null;
  busy: boolean;
  /** A control-node install job is running: it needs the environment running, so no Suspend. */
  installing?: boolean;
}): PovActions {
  const live = p.state === 'active' && p.envId !== null && !p.busy;
  return {
    start: live && (p.runstate === 'suspended' || p.runstate === 'stopped' || p.runstate === 'halted'),
    suspend: live && p.runstate === 'running' && !p.installing,
    destroy: !p.busy && (p.state === 'active' || p.state === 'failed' || p.state === 'destroying'),
    refreshVms: !p.busy && p.envId !== null && (p.state === 'active' || p.state === 'failed'),
  };
}

/** Why an action is refused, in words for the user; null when it is allowed. */
export function povActionRefusal(
  action: keyof PovActions,
  p: { state: PovState; runstate: string | null; envId: string | null; busy: boolean; installing?: boolean },
): string | null {
  if (povActionsFor(p)[action]) return null;
  if (action === 'suspend' && p.installing && !p.busy) {
    return (
      'A control-node install is running for this POV and needs the environment running (the agent enrols over it); cancel the ' +
      'install in Jobs or wait for it to finish, then suspend.'
    );
  }
  if (p.busy) return 'Another operation is still running for this POV; wait for it to finish (see its progress in the list).';
  const rs = p.runstate ?? 'unknown';
  switch (action) {
    case 'start':
      return p.state !== 'active'
        ? `Start needs an active POV; this one is ${p.state}.`
        : `Start needs the environment suspended or stopped; it was last confirmed ${rs}. Run a reconcile (Refresh) if that looks stale.`;
    case 'suspend':
      return p.state !== 'active'
        ? `Suspend needs an active POV; this one is ${p.state}.`
        : `Suspend needs the environment running; it was last confirmed ${rs}. Run a reconcile (Refresh) if that looks stale.`;
    case 'destroy':
      return `Destroy is for active or failed POVs; this one is ${p.state}.`;
    case 'refreshVms':
      return p.envId === null
        ? 'This POV has no Skytap environment, so it has no VMs to read.'
        : `VMs can be read for active or failed POVs; this one is ${p.state}.`;
  }
}

export const povMethods = lazyMethods({
  'pov.create': () =>
    method(
      'Create a POV from a template on a lab platform (Skytap, or local: the connected vm-manager): create the environment, wait ' +
        'until not busy, power on, read the VMs',
      z.strictObject({
        /** Where the POV runs: Skytap (default) or 'local', the connected vm-manager (docs/lab-platforms.md). */
        platform: z.enum(['skytap', 'local']).optional(),
        /** A Skytap template id, or for 'local' a local template id (the same shape). */
        templateId: z
          .string()
          .trim()
          .min(1)
          .max(40)
          .regex(/^[0-9A-Za-z_-]+$/, 'must be a template id (letters, digits, _ and -)'),
        name: z.string().trim().min(1).max(200),
        /** When Skytap deletes the environment (default: now + the auto-delete days setting). Refused for 'local' (no schedules). */
        autoDeleteAt: z.iso.datetime({ offset: true }).optional(),
        /** The customer's IANA time zone, shown beside the SE's wherever the POV shows a time. */
        customerTz: ianaTimeZone.optional(),
      }),
      jobStarted,
      { job: true },
    ),
  'pov.list': () =>
    method(
      'Every POV with its last confirmed runstate (destroyed ones only when includeDestroyed)',
      z.strictObject({ includeDestroyed: z.boolean().optional() }),
      z.strictObject({ povs: z.array(povView) }),
    ),
  'pov.get': () => method('One POV with its VMs', z.strictObject({ id }), z.strictObject({ pov: povView, vms: z.array(povVmView) })),
  'pov.start': () =>
    method('Power the environment on (PUT runstate running, then poll)', z.strictObject({ id }), jobStarted, {
      job: true,
    }),
  'pov.suspend': () =>
    method('Suspend the environment (PUT runstate suspended, then poll)', z.strictObject({ id }), jobStarted, {
      job: true,
    }),
  'pov.destroy': () =>
    method(
      'Delete the environment; complete only when Skytap answers 404. Allowed from active and failed',
      z.strictObject({ id }),
      jobStarted,
      { job: true },
    ),
  'pov.refreshVms': () => method("Read the environment's VMs again", z.strictObject({ id }), jobStarted, { job: true }),
  'pov.setVmOs': () =>
    method(
      "Set (or clear with null) the OS override of one VM; Skytap's own value is kept apart",
      z.strictObject({ povId: id, vmId: id, os: osValue.nullable() }),
      z.strictObject({ vm: povVmView }),
    ),
  'pov.setAutoDelete': () =>
    method(
      "Move the auto-delete time: moves (or re-arms) the Skytap schedule, clamps every share link's expiry to it, re-arms the " +
        'warning ladder',
      z.strictObject({ povId: id, at: z.iso.datetime({ offset: true }) }),
      z.strictObject({ pov: povView }),
    ),
  'pov.setCustomerTz': () =>
    method(
      "Set (or clear with null) the customer's IANA time zone, shown beside the SE's wherever the POV shows a time",
      z.strictObject({ povId: id, customerTz: ianaTimeZone.nullable() }),
      z.strictObject({ pov: povView }),
    ),
  'pov.readiness': () =>
    method(
      "Is this POV ready for the customer? Overall ready/attention/not_ready and a checklist: each item's state, age and the one " +
        'action that fixes it',
      z.strictObject({ id }),
      povReadiness,
    ),
  'pov.setControlNodeName': () =>
    method(
      'Name the control node VM of an existing POV (blank clears it) and re-resolve',
      z.strictObject({ id, name: z.string().trim().max(255) }),
      z.strictObject({ controlNode: controlNodeSummary }),
    ),
  'pov.setRoleHosts': () =>
    method(
      "Name a POV's Entitle agent host and/or Resource Broker host (blank clears; omitted keeps) and re-resolve: resolution's " +
        'step 3 leaves them out',
      z.strictObject({
        id,
        entitleHost: z
          .string()
          .trim()
          .max(255)
          .regex(/^[^\u0000-\u001f\u007f]*$/, 'must have no control characters')
          .optional(),
        brokerHost: z
          .string()
          .trim()
          .max(255)
          .regex(/^[^\u0000-\u001f\u007f]*$/, 'must have no control characters')
          .optional(),
      }),
      z.strictObject({ controlNode: controlNodeSummary }),
    ),
  'pov.setInternetAccess': () =>
    method(
      "Turn a local POV's Internet access on or off (off by default): its VMs reach the outside through this machine's NAT, never " +
        'its loopback; each VM follows it from its next start',
      z.strictObject({ povId: id, on: z.boolean() }),
      z.strictObject({ pov: povView }),
    ),
  'pov.snapshot': () =>
    method(
      "Save a local POV's clean state: every VM's disk, vTPM state and firmware variables, and the memory of each ready VM (which " +
        "runs on from the save); a stopped VM's files alone",
      z.strictObject({ id }),
      jobStarted,
      { job: true },
    ),
  'pov.reset': () =>
    method(
      'Reset a local POV to its clean state: put back what pov.snapshot saved and resume each VM from its saved memory (ready ' +
        'after a fresh verified quote); a VM saved without memory boots its saved disks',
      z.strictObject({ id }),
      jobStarted,
      { job: true },
    ),
  'pov.installControlNode': () =>
    method(
      "Install (or re-install) the agent on a POV's control node; the job's last line says SPIRE or Ed25519",
      z.strictObject({ id }),
      jobStarted,
      { job: true },
    ),
});

export const povStreams = {
  'pov.updated': stream(
    "A POV's row or its running job changed: the POV as pov.list shows it, keyed by POV id; subscribe to '*' for every POV",
    povView,
  ),
} as const;
