/**
 * giantswarm/vm-manager's REST API (`/api/v1`) as zod schemas, written from its OpenAPI document:
 * api/openapi.yaml at commit dc39fe35c638a4f6ec4b9b8cb9788c1a69ef18e3. Each schema names the
 * document's component it mirrors (`#/components/schemas/<Name>`).
 *
 * - Request bodies use the MCP tool argument names (snake_case) and are strict: the server decodes
 *   with unknown fields disallowed, so an extra field is `invalid_request`.
 * - Records are camelCase (except Metrics, which the document spells snake_case). Required fields
 *   are required; optional ones may be ABSENT, never null (the document has no nullable field except
 *   Metrics.guest). Record schemas are plain z.object: parsing strips fields the document does not
 *   name, so `schema.parse(x)` deep-equal to `x` proves `x` carries only documented fields.
 * - Errors are `{"error":{"code","message"}}` with a closed set of codes; ERROR_STATUS is the HTTP
 *   status each code travels with.
 *
 * Imported by the app (its vm client) and by the daemon; only zod, no node:*.
 */
import { VM_STATES } from '../../shared/vm-states';
import { z } from 'zod';
import { lazySchema } from '../../shared/lazy-schema';

/** The document's `servers[0].url`. */
export const API_PREFIX = '/api/v1';

// ---- errors (#/components/schemas/Error) ------------------------------------------------------

export const ERROR_CODES = ['not_found', 'invalid_request', 'conflict', 'unsupported', 'timeout', 'vm_failed', 'internal_error'] as const;
export type ApiErrorCode = (typeof ERROR_CODES)[number];

/** HTTP status per code: 404/400/409 as the routes list them, unsupported 501, timeout 504, vm_failed and internal_error 500. */
export const ERROR_STATUS: Record<ApiErrorCode, number> = {
  not_found: 404,
  invalid_request: 400,
  conflict: 409,
  unsupported: 501,
  timeout: 504,
  vm_failed: 500,
  internal_error: 500,
};

export const errorSchema = lazySchema(() =>
  z.object({
    error: z.object({ code: z.enum(ERROR_CODES), message: z.string() }),
  }),
);
export type ApiError = z.infer<typeof errorSchema>;

// ---- shared field rules ----------------------------------------------------------------------

/** "A DNS label of at most 63 characters" (CreateVMRequest.name, CreateNetworkRequest.name). */
export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const dnsLabel = (field: string) =>
  z
    .string()
    .max(63, `${field} must be at most 63 characters`)
    .regex(DNS_LABEL, `${field} must be a DNS label: lowercase letters, digits and -, not starting or ending with -`);

/** format: date-time (RFC 3339; the Go server may send an offset and nanoseconds). */
const dateTime = lazySchema(() => z.iso.datetime({ offset: true }));
const int = lazySchema(() => z.number().int());
/** An integer request field, with a message naming it. */
const wholeNumber = (field: string) => z.number({ error: `${field} must be a whole number` }).int(`${field} must be a whole number`);

/** IPv4 dotted quad. */
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** "IPv4 subnet, /16 to /29, outside 169.254.0.0/16" (CreateNetworkRequest.cidr). Returns why not, or null. */
export function cidrProblem(cidr: string): string | null {
  const m = /^([^/]+)\/(\d{1,2})$/.exec(cidr);
  if (!m || !IPV4.test(m[1] ?? '')) return `cidr "${cidr}" is not an IPv4 subnet like 10.20.0.0/24`;
  const bits = Number(m[2]);
  if (bits < 16 || bits > 29) return `cidr "${cidr}": the prefix must be /16 to /29`;
  const o = (m[1] ?? '').split('.').map(Number);
  if (o[0] === 169 && o[1] === 254) return `cidr "${cidr}" is inside 169.254.0.0/16 (link-local, where the metadata service lives)`;
  return null;
}

// ---- requests (snake_case, strict) -----------------------------------------------------------

/** #/components/schemas/CreateNetworkRequest */
export const createNetworkRequestSchema = lazySchema(() =>
  z.strictObject({
    name: dnsLabel('name'),
    cidr: z.string().superRefine((v, ctx) => {
      const why = cidrProblem(v);
      if (why) ctx.addIssue({ code: 'custom', message: why });
    }),
    dns_search_domain: z.string().max(253).optional(),
  }),
);
export type CreateNetworkRequest = z.infer<typeof createNetworkRequestSchema>;

export const WAIT_FOR = ['none', 'installed', 'attested', 'ready'] as const;
export type WaitFor = (typeof WAIT_FOR)[number];

/** The document's defaults for CreateVMRequest. */
export const CREATE_VM_DEFAULTS = {
  cpus: 2,
  memory_mib: 2048,
  disk_gib: 20,
  network: 'default',
  require_attestation: true,
  wait_for: 'ready',
} as const;

/** #/components/schemas/CreateVMRequest (defaults are NOT filled in: the server applies CREATE_VM_DEFAULTS). */
export const createVmRequestSchema = lazySchema(() =>
  z.strictObject({
    name: dnsLabel('name'),
    image: z.string().min(1).optional(),
    kubernetes_version: z.string().min(1).optional(),
    cpus: wholeNumber('cpus').min(1, 'cpus must be at least 1').optional(),
    memory_mib: wholeNumber('memory_mib').min(256, 'memory_mib must be at least 256').optional(),
    disk_gib: wholeNumber('disk_gib').min(1, 'disk_gib must be at least 1').optional(),
    network: z.string().min(1).optional(),
    user_data: z.string().optional(),
    ssh_authorized_keys: z.array(z.string()).optional(),
    hostname: z.string().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    require_attestation: z.boolean().optional(),
    wait_for: z.enum(WAIT_FOR).optional(),
  }),
);
export type CreateVmRequest = z.infer<typeof createVmRequestSchema>;

/** #/components/schemas/ExecRequest: program and arguments. */
export const execRequestSchema = lazySchema(() =>
  z.strictObject({
    command: z.array(z.string()).min(1, 'command needs at least the program'),
  }),
);
export type ExecRequest = z.infer<typeof execRequestSchema>;

/** #/components/schemas/ForwardRequest */
export const forwardRequestSchema = lazySchema(() =>
  z.strictObject({
    port: wholeNumber('port').min(1, 'port must be 1 to 65535').max(65535, 'port must be 1 to 65535'),
  }),
);
export type ForwardRequest = z.infer<typeof forwardRequestSchema>;

/** GET /vms/{id}/console?lines=: "default 100, at most 10000". */
export const CONSOLE_LINES = { default: 100, max: 10000 } as const;

// ---- records (camelCase) ---------------------------------------------------------------------

/** #/components/schemas/Device */
export const deviceSchema = lazySchema(() => z.object({ path: z.string(), accessible: z.boolean(), error: z.string().optional() }));
/** #/components/schemas/Tool */
export const toolSchema = lazySchema(() => z.object({ found: z.boolean(), version: z.string().optional(), error: z.string().optional() }));

/** #/components/schemas/Host */
export const hostSchema = lazySchema(() =>
  z.object({
    hostname: z.string(),
    kernel: z.string(),
    cpus: int,
    memoryBytes: int,
    kvm: deviceSchema,
    vhostVsock: deviceSchema,
    qemu: toolSchema,
    swtpm: toolSchema,
    systemd: toolSchema,
    ovmfCode: z.string().optional(),
    storageProviders: z.array(z.string()),
    ready: z.boolean(),
    missing: z.array(z.string()).optional(),
  }),
);
export type Host = z.infer<typeof hostSchema>;

/** #/components/schemas/Image (policy: "an object", its fields are the image build's). */
export const imageSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    version: z.string(),
    uki: z.string(),
    disk: z.string(),
    sysupdateDir: z.string().optional(),
    kubernetesVersions: z.array(z.string()).optional(),
    policy: z.record(z.string(), z.unknown()).optional(),
  }),
);
export type Image = z.infer<typeof imageSchema>;

/** #/components/schemas/NetworkSpec */
export const networkSpecSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    cidr: z.string(),
    gatewayIP: z.string().optional(),
    dnsSearchDomain: z.string().optional(),
    enableIMDS: z.boolean(),
    enableHostAlias: z.boolean().optional(),
  }),
);
/** #/components/schemas/Lease */
export const leaseSchema = lazySchema(() => z.object({ vmID: z.string(), mac: z.string(), ip: z.string() }));
/** #/components/schemas/Network */
export const networkSchema = lazySchema(() => z.object({ spec: networkSpecSchema, gateway: z.string(), leases: z.array(leaseSchema) }));
export type Network = z.infer<typeof networkSchema>;

/** #/components/schemas/Quote */
export const quoteSchema = lazySchema(() => z.object({ verified: z.boolean(), message: z.string().optional(), at: dateTime }));
/** #/components/schemas/Attestation */
export const attestationSchema = lazySchema(() =>
  z.object({
    required: z.boolean(),
    userDataReleased: z.boolean(),
    nonceIssuedAt: dateTime.optional(),
    initrd: quoteSchema.optional(),
    ready: quoteSchema.optional(),
  }),
);
export type Attestation = z.infer<typeof attestationSchema>;

/** #/components/schemas/Paths: "the VM's files below the state directory"; every field optional. */
export const pathsSchema = lazySchema(() =>
  z.object({
    dir: z.string().optional(),
    volume: z.string().optional(),
    console: z.string().optional(),
    tpmState: z.string().optional(),
    ovmfVars: z.string().optional(),
    qmpSocket: z.string().optional(),
    sshKey: z.string().optional(),
    userData: z.string().optional(),
    report: z.string().optional(),
  }),
);

export { VM_STATES };
export type ApiVmState = (typeof VM_STATES)[number];

/** #/components/schemas/VM */
export const vmSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    name: z.string(),
    image: z.string(),
    kubernetesVersion: z.string().optional(),
    cpus: int,
    memoryMiB: int,
    diskGiB: int,
    network: z.string(),
    sshAuthorizedKeys: z.array(z.string()).optional(),
    hostname: z.string().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    region: z.string().optional(),
    zone: z.string().optional(),
    requireAttestation: z.boolean(),
    state: z.enum(VM_STATES),
    phase: z.enum(['install', 'boot']).optional(),
    ip: z.string().optional(),
    mac: z.string().optional(),
    /** vsock context id */
    cid: int,
    machineID: z.string(),
    /** whether an installed boot ever reached READY=1 */
    booted: z.boolean(),
    /** the last STATUS= the guest sent */
    status: z.string().optional(),
    /** vm-manager's per-VM key, the first root authorized key */
    sshPublicKey: z.string(),
    attestation: attestationSchema,
    createdAt: dateTime,
    installedAt: dateTime.optional(),
    bootedAt: dateTime.optional(),
    readyAt: dateTime.optional(),
    lastError: z.string().optional(),
    paths: pathsSchema,
  }),
);
export type ApiVm = z.infer<typeof vmSchema>;

/** #/components/schemas/ExecResult: a non-zero exit is a result, not an error. */
export const execResultSchema = lazySchema(() => z.object({ stdout: z.string(), stderr: z.string(), exitCode: int }));
export type ExecResult = z.infer<typeof execResultSchema>;

/** #/components/schemas/Forward: address is the host loopback ip:port. */
export const forwardSchema = lazySchema(() => z.object({ id: z.string(), port: int, address: z.string() }));
export type Forward = z.infer<typeof forwardSchema>;

/** #/components/schemas/Console */
export const consoleSchema = lazySchema(() => z.object({ id: z.string(), lines: int, console: z.string() }));
export type Console = z.infer<typeof consoleSchema>;

/** #/components/schemas/Metrics (snake_case inside, as the document spells it). */
export const metricsSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    host: z.object({
      state: z.string(),
      attestation: z.enum(['disabled', 'pending', 'released', 'failed']),
      pid: int.optional(),
      cpu_seconds: z.number().optional(),
      memory_rss_bytes: int.optional(),
      disk_bytes: int,
      install_seconds: z.number().optional(),
      boot_to_ready_seconds: z.number().optional(),
      network: z.object({ name: z.string(), bytes_sent: int, bytes_received: int, leases: int }),
    }),
    guest: z
      .object({
        received_at: dateTime,
        generated_at: dateTime.optional(),
        report_age_seconds: z.number(),
        families: int,
        series: int,
        series_exported: int,
        series_dropped: int,
        sample: z.array(
          z.object({
            name: z.string(),
            object: z.string().optional(),
            fields: z.record(z.string(), z.unknown()).optional(),
            value: z.unknown(),
          }),
        ),
      })
      .nullable(),
    raw_report_url: z.string().optional(),
    /** why guest is null */
    note: z.string().optional(),
  }),
);
export type Metrics = z.infer<typeof metricsSchema>;

/** GET /vms/{id}/report: "the report as uploaded", any JSON object. */
export const reportSchema = lazySchema(() => z.record(z.string(), z.unknown()));

// ---- routes ----------------------------------------------------------------------------------

/**
 * Every operation of the document: method, path template under API_PREFIX, the success status and
 * the schema of its body (null: no body, 204), and the error statuses it lists.
 */
export const ROUTES = {
  getHost: { method: 'GET', path: '/host', status: 200, response: hostSchema, errors: [500] },
  listImages: { method: 'GET', path: '/images', status: 200, response: z.array(imageSchema), errors: [] },
  getImage: { method: 'GET', path: '/images/{ref}', status: 200, response: imageSchema, errors: [404] },
  listNetworks: { method: 'GET', path: '/networks', status: 200, response: z.array(networkSchema), errors: [] },
  createNetwork: {
    method: 'POST',
    path: '/networks',
    status: 201,
    request: createNetworkRequestSchema,
    response: networkSchema,
    errors: [400, 409],
  },
  getNetwork: { method: 'GET', path: '/networks/{name}', status: 200, response: networkSchema, errors: [404] },
  deleteNetwork: { method: 'DELETE', path: '/networks/{name}', status: 204, response: null, errors: [404, 409] },
  listVMs: { method: 'GET', path: '/vms', status: 200, response: z.array(vmSchema), errors: [] },
  createVM: { method: 'POST', path: '/vms', status: 201, request: createVmRequestSchema, response: vmSchema, errors: [400, 500, 504] },
  getVM: { method: 'GET', path: '/vms/{id}', status: 200, response: vmSchema, errors: [404] },
  deleteVM: { method: 'DELETE', path: '/vms/{id}', status: 204, response: null, errors: [404, 409] },
  startVM: { method: 'POST', path: '/vms/{id}/start', status: 200, response: vmSchema, errors: [404, 409] },
  stopVM: { method: 'POST', path: '/vms/{id}/stop', status: 200, response: vmSchema, errors: [404, 409] },
  rebootVM: { method: 'POST', path: '/vms/{id}/reboot', status: 200, response: vmSchema, errors: [404, 409] },
  execVM: {
    method: 'POST',
    path: '/vms/{id}/exec',
    status: 200,
    request: execRequestSchema,
    response: execResultSchema,
    errors: [400, 404, 409],
  },
  forwardPort: {
    method: 'POST',
    path: '/vms/{id}/forward',
    status: 200,
    request: forwardRequestSchema,
    response: forwardSchema,
    errors: [400, 404, 409],
  },
  getVMConsole: { method: 'GET', path: '/vms/{id}/console', status: 200, response: consoleSchema, errors: [400, 404] },
  getVMAttestation: { method: 'GET', path: '/vms/{id}/attestation', status: 200, response: attestationSchema, errors: [404] },
  getVMMetrics: { method: 'GET', path: '/vms/{id}/metrics', status: 200, response: metricsSchema, errors: [404] },
  getVMReport: { method: 'GET', path: '/vms/{id}/report', status: 200, response: reportSchema, errors: [404] },
  /** application/yaml, a string */
  getOpenAPI: { method: 'GET', path: '/openapi.yaml', status: 200, response: z.string(), errors: [] },
} as const;
export type OperationId = keyof typeof ROUTES;
