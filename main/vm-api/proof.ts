/**
 * `povdesk vm-manager test`: the lab's proof (vm-manager-lab.md, "The proof") run against one
 * vm-manager from this machine, so an SE or a support engineer can prove a laptop in one command.
 *   0. its own leftovers (VMs called povdesk-vm-test-*, from an interrupted run) are removed first;
 *   1. the identity boundary: GET /api/v1/host answers 401 without the token and the host report with it;
 *   2. the host is ready (nothing missing to run VMs);
 *   3. MCP: giantswarm's nineteen tools with their annotations, instructions naming the call order,
 *      get_host naming the same host, list_images and list_networks answering;
 *   4. unless skipped: one VM on the test image (or the newest), followed to ready with the install
 *      and boot durations, its attestation (both stages verified when the image has golden values
 *      at that size, else booted without and said so), the console's last lines, deleted, and
 *      gone from list_vms. A failed boot prints the VM's lastError and console tail.
 * Plain Node over the API (this folder's client and the MCP SDK): the same checks hold for the
 * app's own manager and for a remote one reached with a token.
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { GOLDEN_VM_SIZE } from '../../shared/golden-size';
import { sleep } from '../lib/sleep';
import { VmManagerClient } from './client';
import type { ApiVm, Image } from './schemas';

/** The prefix of every VM the proof creates: what it removes first. */
export const PROOF_VM_PREFIX = 'povdesk-vm-test-';

/** giantswarm's tools (one per operation of its document but the report and the document itself). */
export const CORE_TOOLS = [
  'get_host',
  'list_images',
  'get_image',
  'list_networks',
  'create_network',
  'get_network',
  'delete_network',
  'list_vms',
  'create_vm',
  'get_vm',
  'delete_vm',
  'start_vm',
  'stop_vm',
  'reboot_vm',
  'exec_vm',
  'forward_port',
  'get_vm_console',
  'get_vm_attestation',
  'get_vm_metrics',
] as const;

export interface ProofOptions {
  url: string;
  token: string;
  /** Skip the VM lifecycle (step 4). */
  skipVm?: boolean;
  /** How long the VM may take to reach ready (default 6 minutes). */
  vmTimeoutMs?: number;
  /** The image to boot (default: povdesk-test when present, else the last listed). */
  image?: string;
  /** One line per check, as it happens. */
  out: (line: string) => void;
  signal?: AbortSignal;
  pollMs?: number;
}

export interface ProofCheck {
  name: string;
  result: 'ok' | 'fail' | 'skip';
  detail: string;
}

export interface ProofResult {
  ok: boolean;
  checks: ProofCheck[];
  /** Seconds, when a VM ran: the installer boot (null: the image has no installer phase) and the boot to ready. */
  durations?: { installSeconds: number | null; bootSeconds: number };
}

const DEFAULT_TIMEOUT_MS = 6 * 60_000;

/** "6m", "90s", "1500ms" or a number of seconds: what --vm-timeout takes. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new Error(`not a duration: ${JSON.stringify(text)} (use e.g. 6m, 90s)`);
  const n = Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const)[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  if (n < 1000 || n > 24 * 3_600_000) throw new Error(`--vm-timeout ${text} is out of range (1s to 24h)`);
  return n;
}

export async function runProof(o: ProofOptions): Promise<ProofResult> {
  const checks: ProofCheck[] = [];
  const note = (name: string, result: ProofCheck['result'], detail: string) => {
    checks.push({ name, result, detail });
    o.out(`${result === 'ok' ? 'ok  ' : result === 'fail' ? 'FAIL' : 'skip'} ${name}: ${detail}`);
  };
  const client = new VmManagerClient(o.url, o.token, { timeoutMs: 60_000 });
  const done = (extra: Partial<ProofResult> = {}): ProofResult => ({ ok: checks.every((c) => c.result !== 'fail'), checks, ...extra });

  // 0. Leftovers of an interrupted run.
  try {
    const left = (await client.list()).filter((v) => v.name.startsWith(PROOF_VM_PREFIX));
    for (const v of left) await client.delete(v.id);
    note(
      'leftovers',
      'ok',
      left.length ? `removed ${left.map((v) => `${v.name} (${v.id})`).join(', ')} from an earlier run` : 'none from an earlier run',
    );
  } catch (e) {
    note('leftovers', 'fail', `could not list or delete VMs: ${(e as Error).message}`);
    return done();
  }

  // 1. The identity boundary.
  const anonymous = await fetch(new URL('/api/v1/host', o.url), {
    headers: { Accept: 'application/json' },
    signal: o.signal ?? null,
  }).catch((e: Error) => e);
  const host = await client.host().catch((e: Error) => e);
  if (anonymous instanceof Error) note('identity', 'fail', `GET /api/v1/host without a token did not answer: ${anonymous.message}`);
  else if (anonymous.status !== 401)
    note(
      'identity',
      'fail',
      `GET /api/v1/host without a token answered ${anonymous.status}, not 401: this vm-manager answers anonymously; start it with a token`,
    );
  else if (host instanceof Error)
    note('identity', 'fail', `GET /api/v1/host with the token failed: ${host.message} (another token, or another vm-manager at ${o.url}?)`);
  else note('identity', 'ok', 'GET /api/v1/host answers 401 without the token and the host report with it');
  if (host instanceof Error) return done();

  // 2. The host is ready.
  const mib = Math.round(host.memoryBytes / 1048576);
  const facts = `${host.hostname}, kernel ${host.kernel}, ${host.cpus} CPUs, ${mib} MiB`;
  if (host.ready) note('host', 'ok', `ready: ${facts}`);
  else note('host', 'fail', `not ready (${facts}): missing ${(host.missing ?? []).join('; ') || 'something it does not name'}`);

  // 3. MCP.
  const images = await mcpChecks(o, host.hostname, note);

  // 4. The lifecycle.
  if (o.skipVm) {
    note('vm', 'skip', '--skip-vm');
    return done();
  }
  if (!host.ready) {
    note('vm', 'skip', 'the host is not ready');
    return done();
  }
  const image = pickImage(images ?? (await client.images().catch(() => [])), o.image);
  if (typeof image === 'string') {
    note('vm', 'fail', image);
    return done();
  }
  const durations = await lifecycle(o, client, image, note);
  return done(durations ? { durations } : {});
}

type Note = (name: string, result: ProofCheck['result'], detail: string) => void;

/** Step 3; the images list_images answered (null when it did not). */
async function mcpChecks(o: ProofOptions, hostname: string, note: Note): Promise<Image[] | null> {
  const mcp = new Client({ name: 'povdesk-vm-manager-test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', o.url), {
    requestInit: { headers: { Authorization: `Bearer ${o.token}` } },
  });
  try {
    await mcp.connect(transport);
  } catch (e) {
    note('mcp', 'fail', `cannot connect to ${new URL('/mcp', o.url).href}: ${(e as Error).message}`);
    return null;
  }
  try {
    const { tools } = await mcp.listTools();
    const by = new Map(tools.map((t) => [t.name, t]));
    const missing = CORE_TOOLS.filter((t) => !by.has(t));
    const wrong = [
      by.get('get_host')?.annotations?.readOnlyHint === true ? null : 'get_host is not marked read-only',
      by.get('delete_vm')?.annotations?.destructiveHint === true ? null : 'delete_vm is not marked destructive',
    ].filter((x): x is string => x !== null);
    if (missing.length || wrong.length)
      note('mcp tools', 'fail', [missing.length ? `missing ${missing.join(', ')}` : '', ...wrong].filter(Boolean).join('; '));
    else
      note('mcp tools', 'ok', `${tools.length} tools, the core ${CORE_TOOLS.length} among them; get_host read-only, delete_vm destructive`);

    const text = mcp.getInstructions() ?? '';
    const order = ['get_host', 'list_images', 'list_networks', 'create_vm'].map((t) => text.indexOf(t));
    if (order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!)))
      note('mcp instructions', 'ok', 'name get_host, list_images, list_networks, create_vm in that order');
    else
      note(
        'mcp instructions',
        'fail',
        `do not name get_host, list_images, list_networks, create_vm in order: ${JSON.stringify(text.slice(0, 200))}`,
      );

    const got = (await mcp.callTool({ name: 'get_host', arguments: {} })) as {
      structuredContent?: { hostname?: string };
      isError?: boolean;
    };
    if (got.isError || got.structuredContent?.hostname !== hostname)
      note('mcp get_host', 'fail', `names ${got.structuredContent?.hostname ?? 'no host'}, the REST call ${hostname}`);
    else note('mcp get_host', 'ok', `names the same host (${hostname})`);

    const listed = async (tool: string) => {
      const r = (await mcp.callTool({ name: tool, arguments: {} })) as { content?: { type: string; text?: string }[]; isError?: boolean };
      const body = r.content?.find((c) => c.type === 'text')?.text;
      if (r.isError || body === undefined) throw new Error(`${tool} answered an error: ${body ?? 'no text'}`);
      return JSON.parse(body) as unknown[];
    };
    const images = (await listed('list_images')) as Image[];
    const networks = (await listed('list_networks')) as { spec?: { name?: string } }[];
    const withoutGolden = images.filter((i) => !hasGoldenValues(i)).map((i) => i.id);
    note(
      'mcp lists',
      'ok',
      `list_images: ${images.length} (${images.map((i) => i.id).join(', ') || 'none'})` +
        `${withoutGolden.length ? `; without golden PCR values: ${withoutGolden.join(', ')}` : ''}; ` +
        `list_networks: ${networks.map((n) => n.spec?.name ?? '?').join(', ')}`,
    );
    return images;
  } catch (e) {
    note('mcp', 'fail', (e as Error).message);
    return null;
  } finally {
    await mcp.close().catch(() => undefined);
  }
}

/** Whether an image's policy carries golden values (the document's policy is free-form: the build's fields). */
function hasGoldenValues(i: Image): boolean {
  const golden = (i.policy as { golden?: { sha256?: Record<string, string> } } | undefined)?.golden?.sha256;
  return golden !== undefined && Object.keys(golden).length > 0;
}

function pickImage(images: Image[], wanted: string | undefined): Image | string {
  if (wanted) return images.find((i) => i.id === wanted) ?? `no image ${wanted} (images: ${images.map((i) => i.id).join(', ') || 'none'})`;
  if (!images.length) return 'no image to boot: build the test image with `povdesk vm-manager image build-test`';
  return images.find((i) => i.id === 'povdesk-test') ?? images.at(-1)!;
}

const seconds = (from: string | undefined, to: string | undefined) => (from && to ? (Date.parse(to) - Date.parse(from)) / 1000 : null);

/** Step 4; the durations when the VM reached ready. */
async function lifecycle(
  o: ProofOptions,
  client: VmManagerClient,
  image: Image,
  note: Note,
): Promise<ProofResult['durations'] | undefined> {
  const attested = hasGoldenValues(image);
  const size = attested ? GOLDEN_VM_SIZE : { cpus: 1, memoryMiB: 1024 };
  const name = `${PROOF_VM_PREFIX}${randomBytes(3).toString('hex')}`;
  const started = Date.now();
  let vm: ApiVm;
  try {
    vm = await client.create({
      name,
      image: image.id,
      cpus: size.cpus,
      memory_mib: size.memoryMiB,
      require_attestation: attested,
      wait_for: 'none',
    });
  } catch (e) {
    note('vm create', 'fail', `create_vm on ${image.id}: ${(e as Error).message}`);
    // A create that failed at the start may have left its record: remove it now, not at the next run.
    const left = (await client.list().catch(() => [])).filter((v) => v.name === name);
    for (const v of left) await client.delete(v.id).catch(() => undefined);
    return undefined;
  }
  note(
    'vm create',
    'ok',
    `${name} (${vm.id}) on ${image.id}, ${size.cpus} CPU${size.cpus > 1 ? 's' : ''}, ${size.memoryMiB} MiB, ` +
      (attested
        ? 'attestation required'
        : 'without attestation: the image has no golden PCR values yet (record them with `povdesk vm-manager image golden`)'),
  );
  const states: string[] = [vm.state];
  const deadline = started + (o.vmTimeoutMs ?? DEFAULT_TIMEOUT_MS);
  let durations: ProofResult['durations'] | undefined;
  try {
    while (vm.state !== 'ready' && vm.state !== 'failed' && Date.now() < deadline) {
      await sleep(o.pollMs ?? 1000, o.signal);
      vm = await client.get(vm.id);
      if (states.at(-1) !== vm.state) states.push(vm.state);
    }
    if (vm.state !== 'ready') {
      const tail = await client
        .console(vm.id, 20)
        .then((c) => c.console.trimEnd())
        .catch(() => '(no console)');
      const why =
        vm.state === 'failed'
          ? `failed: ${vm.lastError ?? 'no lastError'}`
          : `not ready after ${Math.round((o.vmTimeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000)} s ` +
            `(state ${vm.state}${vm.status ? `, "${vm.status}"` : ''}); raise --vm-timeout on a slow host`;
      note('vm ready', 'fail', `${name} ${why}; states ${states.join(' → ')}\n--- console (last lines) ---\n${tail}`);
      return undefined;
    }
    // Only an image with an installer phase goes through `installing` (the test image boots its own overlay).
    const install = states.includes('installing') ? seconds(vm.createdAt, vm.installedAt) : null;
    const boot = seconds(vm.installedAt ?? vm.createdAt, vm.readyAt) ?? (Date.now() - started) / 1000;
    durations = { installSeconds: install, bootSeconds: boot };
    note(
      'vm ready',
      'ok',
      `states ${states.join(' → ')}; ` +
        `install ${install === null ? 'none (the image has no installer phase)' : `${install.toFixed(1)} s`}; ` +
        `boot ${boot.toFixed(1)} s`,
    );

    const att = await client.attestation(vm.id);
    if (!att.required)
      note('vm attestation', 'ok', 'not required: the VM booted without attestation (no golden values for this image yet)');
    else if (att.initrd?.verified && att.ready?.verified) note('vm attestation', 'ok', 'initrd and ready quotes verified');
    else
      note(
        'vm attestation',
        'fail',
        `initrd: ${att.initrd?.message ?? (att.initrd?.verified ? 'verified' : 'none')}; ` +
          `ready: ${att.ready?.message ?? (att.ready?.verified ? 'verified' : 'none')}`,
      );

    const tail = (await client.console(vm.id, 5)).console.trimEnd();
    note('vm console', 'ok', `last lines:\n${tail}`);
  } catch (e) {
    note('vm', 'fail', (e as Error).message);
  } finally {
    try {
      await client.delete(vm.id);
      const still = (await client.list()).some((v) => v.id === vm.id);
      note(
        'vm delete',
        still ? 'fail' : 'ok',
        still ? `${name} is still listed after delete_vm` : `${name} deleted; list_vms no longer has it`,
      );
    } catch (e) {
      note('vm delete', 'fail', `${name}: ${(e as Error).message}; the next run removes it first`);
    }
  }
  return durations;
}
