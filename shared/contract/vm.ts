import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { jobStarted, method, noArgs, ok, stream, lazyMethods } from './define';
import { VM_STATES } from '../vm-states';
import { refineCredentialUrl } from '../url-policy';

/**
 * The app's side of a vm-manager (the local one this app starts, or a remote one reached with a
 * bearer token). Records here are the app's view, normalised from the manager's REST answers.
 */

export { VM_STATES };
export const vmState = lazySchema(() => z.enum(VM_STATES));
export type VmState = z.infer<typeof vmState>;

const vmId = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, 'a VM id: letters, digits, - and _'),
);
const dnsLabel = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(63)
    .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'a DNS label: lower-case letters, digits and -, not starting or ending with -'),
);

export const vmTool = lazySchema(() =>
  z.strictObject({ name: z.string(), found: z.boolean(), version: z.string().nullable(), error: z.string().nullable() }),
);
export const vmAccelProbe = lazySchema(() => z.strictObject({ accel: z.string(), result: z.string(), detail: z.string() }));
export const vmHost = lazySchema(() =>
  z.strictObject({
    endpoint: z.string(),
    mode: z.enum(['local', 'remote']),
    /** local only: why the manager is not running (the report was then made by the app itself) */
    managerError: z.string().nullable(),
    hostname: z.string(),
    kernel: z.string(),
    /** What this kind of host can run, in plain words (x86_64 under TCG on Apple Silicon…); null when nothing needs saying. */
    platformNote: z.string().nullable(),
    cpus: z.number(),
    memoryBytes: z.number(),
    tools: z.array(vmTool),
    ovmfCode: z.string().nullable(),
    guestKernel: z.string().nullable(),
    accelerator: z.strictObject({
      chosen: z.string().nullable(),
      reason: z.string(),
      warning: z.string().nullable(),
      probes: z.array(vmAccelProbe),
    }),
    ready: z.boolean(),
    missing: z.array(z.strictObject({ what: z.string(), install: z.string() })),
  }),
);
export type VmHost = z.infer<typeof vmHost>;

export const vmImage = lazySchema(() =>
  z.strictObject({
    name: z.string(),
    kind: z.string(),
    createdAt: z.string().nullable(),
    sizeBytes: z.number().nullable(),
    /** how many PCRs have golden values in the image's policy.json (0: learn mode / none) */
    goldenPcrs: z.number(),
    hasPolicy: z.boolean(),
    /** set when the host's firmware is not the one the golden values were learned with: learn them again */
    firmwareChanged: z.string().nullable(),
    /** sizes other than GOLDEN_VM_SIZE that a learn boot ran at (their PCRs differ: shared/golden-size.ts) */
    goldenSizes: z.array(z.strictObject({ cpus: z.number(), memoryMib: z.number() })),
    /** the reference measurements made from the image's files (VMs of any size attest against them), in one line; null: none */
    references: z.string().nullable(),
    /** why the image has no references (its boot cannot be predicted): golden values are its fallback */
    unpredictable: z.string().nullable(),
  }),
);
export type VmImage = z.infer<typeof vmImage>;

export const vmRecord = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    name: z.string(),
    image: z.string(),
    cpus: z.number(),
    memoryMib: z.number(),
    diskGib: z.number(),
    requireAttestation: z.boolean(),
    state: vmState,
    accel: z.string().nullable(),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    bootedAt: z.string().nullable(),
    readyAt: z.string().nullable(),
    durations: z.strictObject({
      installSeconds: z.number().nullable(),
      bootSeconds: z.number().nullable(),
      readySeconds: z.number().nullable(),
    }),
    lastError: z.string().nullable(),
    attestation: z.strictObject({
      required: z.boolean(),
      userDataReleased: z.boolean(),
      initrdVerified: z.boolean().nullable(),
      readyVerified: z.boolean().nullable(),
    }),
    /** While QEMU runs: the port on this machine's 127.0.0.1 that reaches the guest's SSH port (22). */
    sshPort: z.number().int().min(1).max(65535).nullable(),
    /** The guest's SSH host key (`ssh-ed25519 <base64>`), made by the manager and released to the guest only after attestation. */
    sshHostKey: z.string().nullable(),
    /** While it runs: the VM's address on its network (its lease; what the other VMs of a POV reach it at). */
    ip: z.string().nullable().optional(),
  }),
);
export type VmRecord = z.infer<typeof vmRecord>;

export const pcrRow = lazySchema(() =>
  z.strictObject({
    index: z.number().int(),
    value: z.string(),
    /** what the PCR must be: the image's golden value, or the replay of the event log (images with references) */
    golden: z.string().nullable(),
    /** null: not compared (computed by the verifier, record-only, or no golden value yet) */
    match: z.boolean().nullable(),
    note: z.string().nullable(),
  }),
);
export type PcrRow = z.infer<typeof pcrRow>;

/** The event-log check of a quote (images with reference measurements): counts and the first event that did not pass. */
export const eventCheck = lazySchema(() =>
  z.strictObject({
    count: z.number().int(),
    checked: z.number().int(),
    allowed: z.number().int(),
    mismatch: z
      .strictObject({
        event: z.number().int(),
        type: z.string(),
        pcr: z.number().int(),
        expected: z.string(),
        seen: z.string(),
        what: z.string(),
      })
      .nullable(),
  }),
);

export const attestationStage = lazySchema(() =>
  z.strictObject({
    stage: z.enum(['initrd', 'ready']),
    verified: z.boolean(),
    message: z.string(),
    at: z.string().nullable(),
    failed: z.string().nullable(),
    pcrs: z.array(pcrRow),
    /** null: the stage was checked against golden values, or by a manager that does not say */
    events: eventCheck.nullable(),
  }),
);

export const vmAttestation = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    required: z.boolean(),
    userDataReleased: z.boolean(),
    akFingerprint: z.string().nullable(),
    nonceIssuedAt: z.string().nullable(),
    /** the image's policy.json, when the manager exposes it */
    policyKnown: z.boolean(),
    stages: z.array(attestationStage),
  }),
);
export type VmAttestation = z.infer<typeof vmAttestation>;

export const VM_NETWORKS = ['restricted', 'nat'] as const;

/** What a learn boot proposes for an image's policy: shown as a table, saved only when confirmed. */
const learnCpus = () => z.number().int().min(1).max(64);
const learnMemoryMib = () => z.number().int().min(256).max(1_048_576);
export const vmLearnedGolden = lazySchema(() =>
  z.strictObject({
    image: z.string(),
    /** the learn boot's size: the values hold for VMs of this size only */
    cpus: learnCpus(),
    memoryMib: learnMemoryMib(),
    golden: z.record(
      z.string().regex(/^(?:[0-9]|1[0-9]|2[0-3])$/, 'a PCR number 0-23'),
      z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 value'),
    ),
    pcrs: z.record(z.string(), z.string()),
    firmware: z.strictObject({ path: z.string(), sha256: z.string() }).nullable(),
    seconds: z.number(),
  }),
);
export type VmLearnedGolden = z.infer<typeof vmLearnedGolden>;

export const vmConnection = lazySchema(() =>
  z.strictObject({
    mode: z.enum(['local', 'remote']),
    url: z.string().nullable(),
    /** remote: a static bearer token, or an OIDC login to the cluster's issuer */
    auth: z.enum(['token', 'oidc']),
    /** token: a token is in the keychain; oidc: a login is (it may still need a refresh) */
    tokenSet: z.boolean(),
    oidcIssuer: z.string().nullable(),
    oidcClientId: z.string().nullable(),
    /** PEM file of the CA that signs the remote manager's (and issuer's) certificate; null: the system's */
    caBundle: z.string().nullable(),
    /** local: the manager's pid and state dir when running */
    pid: z.number().nullable(),
    stateDir: z.string().nullable(),
  }),
);
export type VmConnection = z.infer<typeof vmConnection>;

export const vmConsoleChunk = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    /** raw console text (may hold escape sequences) */
    text: z.string(),
    /** true when the console file was truncated or replaced: clear before writing */
    reset: z.boolean(),
  }),
);
export type VmConsoleChunk = z.infer<typeof vmConsoleChunk>;

export const vmExecResult = lazySchema(() => z.strictObject({ stdout: z.string(), stderr: z.string(), exitCode: z.number().int() }));
export type VmExecResult = z.infer<typeof vmExecResult>;

/** A guest port reachable on this machine: the app's listener (localAddress) relaying to the manager's forward. */
export const vmForward = lazySchema(() =>
  z.strictObject({
    id: z.string(),
    vmId: z.string(),
    vmName: z.string(),
    guestPort: z.number().int(),
    localAddress: z.string(),
    managerAddress: z.string(),
  }),
);
export type VmForward = z.infer<typeof vmForward>;

export const vmLogin = lazySchema(() =>
  z.strictObject({
    jobId: z.string(),
    userCode: z.string(),
    verificationUri: z.string(),
    verificationUriComplete: z.string().nullable(),
    expiresIn: z.number(),
  }),
);
export type VmLogin = z.infer<typeof vmLogin>;

const byId = lazySchema(() => z.strictObject({ id: vmId }));
const vmResult = lazySchema(() => z.strictObject({ vm: vmRecord }));

export const vmCreateArgs = lazySchema(() =>
  z.strictObject({
    name: dnsLabel,
    image: z.string().min(1).max(200),
    cpus: z.number().int().min(1).max(64),
    memoryMib: z.number().int().min(256).max(1_048_576),
    diskGib: z.number().int().min(1).max(4096),
    userData: z
      .string()
      .max(8 * 1024 * 1024)
      .optional(),
    requireAttestation: z.boolean(),
    waitFor: z.enum(['none', 'attested', 'ready']).optional(),
    /**
     * 'restricted' (default): metadata service and SSH forward only; 'nat': the guest may also reach
     * this machine's loopback services and the network
     */
    network: z.enum(VM_NETWORKS).optional(),
  }),
);
export type VmCreateArgs = z.infer<typeof vmCreateArgs>;

const remoteUrl = lazySchema(() =>
  z
    .string()
    .max(300)
    .refine((s) => /^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(s), 'must be an http(s) URL')
    .superRefine(refineCredentialUrl('the remote vm-manager URL')),
);

export const vmMethods = lazyMethods({
  'vm.connection': () => method('Which vm-manager the app talks to (the local one it started, or a remote one)', noArgs, vmConnection),
  'vm.setConnection': () =>
    method(
      'Use the local vm-manager, or a remote one at url with a bearer token (kept in the keychain; omit to keep the stored one)',
      z.strictObject({
        mode: z.enum(['local', 'remote']),
        url: remoteUrl.optional(),
        token: z.string().min(1).max(2000).optional(),
        auth: z.enum(['token', 'oidc']).optional(),
        oidcIssuer: z
          .string()
          .max(300)
          .refine((s) => /^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(s), 'must be an http(s) URL')
          .superRefine(refineCredentialUrl('the OIDC issuer URL'))
          .optional(),
        oidcClientId: z
          .string()
          .min(1)
          .max(200)
          .regex(/^[\x21-\x7e]+$/, 'printable characters, no spaces')
          .optional(),
        /** a PEM file path; '' clears it (the system's CAs) */
        caBundle: z.string().max(4096).optional(),
      }),
      vmConnection,
    ),
  'vm.host': () =>
    method(
      'Host report: accelerator chosen and why, tools found, missing pieces with install lines (recheck: retry a local manager ' +
        'that failed to start)',
      z.strictObject({ recheck: z.boolean().optional() }),
      vmHost,
    ),
  'vm.images': () => method('Images in the vm-manager store', noArgs, z.strictObject({ images: z.array(vmImage) })),
  'vm.list': () => method('VMs, oldest first', noArgs, z.strictObject({ vms: z.array(vmRecord) })),
  'vm.get': () => method('One VM', byId, vmResult),
  'vm.create': () =>
    method('Create a VM and follow it to waitFor (default ready); cancel deletes the half-made VM', vmCreateArgs, jobStarted, {
      job: true,
    }),
  'vm.start': () => method('Start a stopped or failed VM', byId, vmResult),
  'vm.stop': () => method('Stop a running VM (powerdown, then SIGTERM, then SIGKILL)', byId, vmResult),
  'vm.reboot': () => method('Reset a running VM', byId, vmResult),
  'vm.delete': () => method('Delete a VM and its files', byId, ok),
  'vm.console': () =>
    method(
      'The last lines of a VM console',
      z.strictObject({ id: vmId, lines: z.number().int().min(1).max(10_000) }),
      z.strictObject({ id: z.string(), lines: z.array(z.string()) }),
    ),
  'vm.consoleFollow': () =>
    method(
      'Start following a VM console on the vm.console stream (subscribe first); returns the tail the stream continues from',
      z.strictObject({ id: vmId, lines: z.number().int().min(1).max(10_000).optional() }),
      z.strictObject({ id: z.string(), text: z.string() }),
    ),
  'vm.attestation': () =>
    method(
      "Attestation of a VM: stages, verdicts, the event-log check against the image's reference measurements (or golden values), " +
        'the PCR table',
      byId,
      vmAttestation,
    ),
  'vm.learnGolden': () =>
    method(
      "Learn an image's golden PCR values: one boot in learn mode for that image only, at the size given (cpus, memoryMib; " +
        'default 2 CPUs, 2048 MiB: the values hold for VMs of that size only), then shut down; the job result (VmLearnedGolden) is ' +
        'saved only by vm.saveGolden',
      z.strictObject({ image: z.string().min(1).max(200), cpus: learnCpus().optional(), memoryMib: learnMemoryMib().optional() }),
      jobStarted,
      { job: true },
    ),
  'vm.saveGolden': () =>
    method(
      "Save confirmed golden PCR values (from a vm.learnGolden result) into the image's policy, for the size they were learned at " +
        '(cpus and memoryMib; default 2 CPUs, 2048 MiB)',
      vmLearnedGolden
        .pick({ image: true, golden: true, firmware: true })
        .extend({ cpus: learnCpus().optional(), memoryMib: learnMemoryMib().optional() })
        .strict(),
      z.strictObject({ image: vmImage }),
    ),
  'vm.remakeReferences': () =>
    method(
      "Make an image's reference measurements again from its files (no boot): after the host's firmware changed, say",
      z.strictObject({ image: z.string().min(1).max(200) }),
      z.strictObject({ image: vmImage }),
    ),
  'vm.login': () =>
    method(
      "Log in to the remote vm-manager's OIDC issuer with a device code: open verificationUri and enter userCode; the job ends " +
        'when the login is approved (tokens go to the keychain)',
      noArgs,
      vmLogin,
      { job: true },
    ),
  'vm.logout': () => method('Forget the OIDC login (removes its tokens from the keychain)', noArgs, ok),
  'vm.exec': () =>
    method(
      'Run a command as root in a VM (over its manager); a non-zero exit is a result, not an error',
      z.strictObject({ id: vmId, command: z.array(z.string().max(8192)).min(1).max(256) }),
      vmExecResult,
    ),
  'vm.forward': () =>
    method(
      "Forward a guest TCP port to this machine's 127.0.0.1 (a port the app listens on, relaying to the manager's forward)",
      z.strictObject({ id: vmId, port: z.number().int().min(1).max(65535) }),
      z.strictObject({ forward: vmForward }),
    ),
  'vm.forwards': () =>
    method(
      'The guest ports forwarded to this machine (of one VM, or all)',
      z.strictObject({ id: vmId.optional() }),
      z.strictObject({ forwards: z.array(vmForward) }),
    ),
  'vm.unforward': () =>
    method('Remove a forwarded port (closes the listener on this machine)', z.strictObject({ forwardId: z.string().min(1).max(64) }), ok),
  'vm.imageBuildTest': () =>
    method("Build the small attestable test image from this machine's packages (local manager only)", noArgs, jobStarted, {
      job: true,
    }),
});

export const vmStreams = {
  'vm.console': stream('Console output of a VM as it is written, keyed by VM id', vmConsoleChunk, 'manual'),
  'vm.updated': stream(
    "A VM's record changed (state, attestation, ports) or the VM is gone (vm null), keyed by VM id; subscribe to '*' for every VM",
    z.strictObject({ id: z.string(), vm: vmRecord.nullable() }),
  ),
  'vm.imagesUpdated': stream("The vm-manager's image store changed: every image (key 'all')", z.strictObject({ images: z.array(vmImage) })),
} as const;
