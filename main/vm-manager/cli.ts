/**
 * `povdesk vm-manager …`:
 *   serve [--state-dir D] [--port N | --socket P] [--token-file F] [--learn-golden IMAGE[,IMAGE]] [--stop-vms-on-exit] [--exit-unowned F]
 *   image build-test [--no-golden] [--state-dir D]
 *   image import <file> [--name N] [--state-dir D]
 *   image references <image> [--state-dir D]
 *   image golden <image> --from-vm <id> [--server URL [--token-file F]] [--clear] [--state-dir D]
 *   test [--state-dir D | --server URL [--token-file F]] [--skip-vm] [--vm-timeout 6m] [--image NAME]
 * Default state dir: $POVDESK_HOME/vm-manager. The token: POVDESK_VMM_TOKEN or a 0600 --token-file
 * (`--token T` still works, with a warning: a command line is readable by every local user).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { goldenForSize, recordGolden, recordGoldenForSize, sizeKey, type ImagePolicy } from './attest/index';
import { GOLDEN_VM_SIZE, isGoldenVmSize } from '../../shared/golden-size';
import { attestationView } from './views';
import { parseFlags } from '../lib/flags';
import { VmmError } from './errors';
import { firmwareChange } from './golden';
import { learnOffline } from './learn-offline';
import { findOvmf } from './host';
import { getImage, readPolicy, remakeReferences, writePolicy } from './images';
import { importImage } from './image-import';
import { buildTestImage } from './test-image';
import { referencesSummary } from './image-references';
import { runProofCli } from './proof-cli';
import { defaultStateDir, serve } from './server';
import { exitWhenUnowned, UNOWNED_GRACE_MS } from './unowned';
import type { VmRecord } from './vms';

/** Every flag of every subcommand (a subcommand ignores the ones it does not use, as before). */
const OPTIONS = {
  'state-dir': { type: 'string' },
  port: { type: 'string' },
  socket: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  name: { type: 'string' },
  'from-vm': { type: 'string' },
  server: { type: 'string' },
  'learn-golden': { type: 'string' },
  'exit-unowned': { type: 'string' },
  'vm-timeout': { type: 'string' },
  image: { type: 'string' },
  'stop-vms-on-exit': { type: 'boolean' },
  clear: { type: 'boolean' },
  'no-golden': { type: 'boolean' },
  help: { type: 'boolean' },
  'skip-vm': { type: 'boolean' },
} as const;

type Flags = ReturnType<typeof parse>['values'];

function parse(argv: string[]) {
  return parseFlags(argv, OPTIONS, 'povdesk vm-manager --help', (message, flag) =>
    flag === '--learn-golden' && !message.startsWith('unknown')
      ? new VmmError(
          'invalid_request',
          '--learn-golden needs the image(s) to learn, e.g. --learn-golden povdesk-test (learn mode is per image, never the whole daemon)',
        )
      : new VmmError('invalid_request', message),
  );
}

const USAGE =
  'usage: povdesk vm-manager serve [--state-dir D] [--port N | --socket P] [--token-file F] [--learn-golden IMAGE[,IMAGE]] ' +
  `[--stop-vms-on-exit]
                                      [--exit-unowned <home>/owner.json]   (exit once no VM runs and that owner is gone)
       povdesk vm-manager image build-test [--no-golden] [--state-dir D]
       povdesk vm-manager image import <file> [--name N] [--state-dir D]
       povdesk vm-manager image references <image> [--state-dir D]
       povdesk vm-manager image golden <image> --from-vm <id> [--server URL [--token-file F]] [--clear] [--state-dir D]
       povdesk vm-manager test [--state-dir D | --server URL [--token-file F]] [--skip-vm] [--vm-timeout 6m] [--image NAME]
         proves this laptop: its own leftovers removed, the token boundary, host readiness, the MCP
         tools, then one VM booted to ready (install and boot durations), attested, deleted
The API token comes from POVDESK_VMM_TOKEN or --token-file (a file only you may read: chmod 600);
serve makes a random one without either. Not --token T: a command line is readable by every local user.`;

/** The API token: --token-file (mode 0600), else POVDESK_VMM_TOKEN, else --token with a warning; undefined for none. */
function tokenOption(flags: Flags, env: NodeJS.ProcessEnv, warn: (s: string) => void): string | undefined {
  const file = flags['token-file'];
  if (typeof file === 'string') {
    const st = statSync(file, { throwIfNoEntry: false });
    if (!st?.isFile()) throw new VmmError('invalid_request', `--token-file ${file} is not a file`);
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
      throw new VmmError(
        'invalid_request',
        `--token-file ${file} may be read by other users (mode ${(st.mode & 0o777).toString(8)}): chmod 600 ${file}`,
      );
    }
    const token = readFileSync(file, 'utf8').trim();
    if (!token) throw new VmmError('invalid_request', `--token-file ${file} is empty`);
    return token;
  }
  const arg = flags.token;
  if (typeof arg === 'string') {
    warn(
      'warning: --token puts the token on the command line, readable by every local user (ps, /proc/<pid>/cmdline); ' +
        'use POVDESK_VMM_TOKEN or --token-file <file> (chmod 600)',
    );
    return arg;
  }
  return env.POVDESK_VMM_TOKEN || undefined;
}

export async function runVmManagerCli(
  argv: string[],
  out: (s: string) => void = (s) => process.stdout.write(s + '\n'),
  err: (s: string) => void = (s) => process.stderr.write(s + '\n'),
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  try {
    const { positionals: pos, values: flags } = parse(argv);
    const str = (k: keyof typeof OPTIONS) => (typeof flags[k] === 'string' ? flags[k] : undefined);
    if (flags.help || pos.length === 0) {
      out(USAGE);
      return pos.length === 0 && !flags.help ? 2 : 0;
    }
    const [cmd, sub, arg] = pos;
    if (cmd === 'test') {
      const server = str('server');
      const token = server ? tokenOption(flags, env, err) : undefined;
      return await runProofCli({
        stateDir: () => resolve(str('state-dir') ?? defaultStateDir(env)),
        ...(server ? { server } : {}),
        ...(token ? { token } : {}),
        skipVm: flags['skip-vm'] === true,
        ...(str('vm-timeout') ? { vmTimeout: str('vm-timeout')! } : {}),
        ...(str('image') ? { image: str('image')! } : {}),
        out,
        err,
      });
    }
    const stateDir = resolve(str('state-dir') ?? defaultStateDir());
    if (cmd === 'serve') {
      const port = str('port');
      if (port !== undefined && !/^\d+$/.test(port)) throw new VmmError('invalid_request', `--port must be a number, got ${port}`);
      const m = await serve({
        stateDir,
        port: port ? Number(port) : 0,
        socket: str('socket'),
        token: tokenOption(flags, env, err),
        learn: str('learn-golden')?.split(',').filter(Boolean),
        log: (s) => err(`vm-manager: ${s}`),
      });
      out(
        JSON.stringify({
          url: m.url,
          token: m.token,
          stateDir: m.stateDir,
          pid: process.pid,
          accelerator: m.host.accelerator.chosen,
          recovered: m.recovered,
        }),
      );
      await new Promise<void>((r) => {
        process.once('SIGINT', r);
        process.once('SIGTERM', r);
        const ownerFile = str('exit-unowned');
        if (ownerFile) {
          const graceMs = Number(process.env.POVDESK_VMM_UNOWNED_GRACE_MS) || UNOWNED_GRACE_MS;
          exitWhenUnowned({
            ownerFile,
            vms: () => m.vms.list(),
            requests: m.requests,
            graceMs,
            exit: (why) => (err(`vm-manager: exiting: ${why}`), r()),
          });
        }
      });
      await m.close({ stopVms: flags['stop-vms-on-exit'] === true });
      return 0;
    }
    if (cmd === 'image' && sub === 'build-test') {
      // A signal (the app's job cancelled, or the app quitting) stops the learn boot and its swtpm
      // before this process exits, instead of killing only this process.
      const stop = new AbortController();
      const onSignal = (sig: NodeJS.Signals) => stop.abort(sig);
      for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(sig, onSignal);
      try {
        return await buildTest(stateDir, flags, stop.signal, out, err);
      } finally {
        for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.off(sig, onSignal);
      }
    }
    if (cmd === 'image' && sub === 'import') {
      if (!arg) throw new VmmError('invalid_request', 'image import needs a file: image import <file>');
      out(JSON.stringify(await importImage(stateDir, arg, { name: str('name') })));
      return 0;
    }
    if (cmd === 'image' && sub === 'references') {
      if (!arg) throw new VmmError('invalid_request', 'image references needs an image name: image references <image>');
      const policy = remakeReferences(stateDir, arg);
      out(
        JSON.stringify({
          image: arg,
          references: policy.references ? referencesSummary(policy.references) : null,
          unpredictable: policy.unpredictable ?? null,
        }),
      );
      return policy.references ? 0 : 1;
    }
    if (cmd === 'image' && sub === 'golden') {
      if (!arg) throw new VmmError('invalid_request', 'image golden needs an image name: image golden <image> --from-vm <id>');
      const vmId = str('from-vm');
      if (!vmId) throw new VmmError('invalid_request', 'image golden needs --from-vm <id>');
      const image = getImage(stateDir, arg);
      let att: {
        image: string;
        cpus?: number;
        memoryMiB?: number;
        ready: VmRecord['attestation']['ready'];
        initrd: VmRecord['attestation']['initrd'];
      };
      const server = str('server');
      if (server) {
        // The attestation answer carries this daemon's stage results under `povdesk` (views.ts).
        const res = await fetch(new URL(`/api/v1/vms/${encodeURIComponent(vmId)}/attestation`, server), {
          headers: { Authorization: `Bearer ${tokenOption(flags, env, err) ?? ''}` },
        });
        const body = (await res.json().catch(() => null)) as { povdesk?: typeof att; error?: { code: string; message: string } } | null;
        if (!res.ok || !body?.povdesk)
          throw new VmmError(
            res.status === 404 ? 'not_found' : 'internal',
            `${server} answered ${res.status} for VM ${vmId}'s attestation: ` +
              (body?.error?.message ?? 'no attestation with stage results (is it a POV Desk vm-manager?)'),
          );
        att = body.povdesk;
      } else {
        const file = join(stateDir, 'vms', vmId, 'vm.json');
        if (!/^[0-9a-f]{8}$/.test(vmId) || !existsSync(file)) throw new VmmError('not_found', `no VM ${vmId} under ${stateDir}`);
        att = attestationView(stateDir, JSON.parse(readFileSync(file, 'utf8')) as VmRecord);
      }
      if (att.image !== image.name) throw new VmmError('invalid_request', `VM ${vmId} runs image "${att.image}", not "${image.name}"`);
      if (!att.ready?.verified)
        throw new VmmError(
          'conflict',
          `VM ${vmId} has no verified ready-stage quote (${att.ready?.message ?? 'none yet'}); ` +
            'boot it with `serve --learn-golden` and wait until it is ready',
        );
      const policy = readPolicy(image.dir) as ImagePolicy | null;
      if (!policy) throw new VmmError('not_found', `image ${image.name} has no policy.json`);
      // The values hold for the VM's size (shared/golden-size.ts): the default size's go to golden,
      // another size's to golden_sizes (always whole: --clear is for the default set only).
      const size = { cpus: att.cpus ?? GOLDEN_VM_SIZE.cpus, memoryMiB: att.memoryMiB ?? GOLDEN_VM_SIZE.memoryMiB };
      const next = isGoldenVmSize(size.cpus, size.memoryMiB)
        ? recordGolden(policy, att.ready.pcrs, { clear: flags['clear'] === true })
        : recordGoldenForSize(policy, size, att.ready.pcrs);
      writePolicy(image.dir, next);
      out(JSON.stringify({ image: image.name, size: sizeKey(size), golden: goldenForSize(next, size).sha256 }));
      return 0;
    }
    err(USAGE);
    return 2;
  } catch (e) {
    const code = (e as { code?: string }).code;
    err(`vm-manager: ${code ? `${code}: ` : ''}${e instanceof Error ? e.message : String(e)}`);
    return code === 'invalid_request' ? 2 : 1;
  }
}

/**
 * `image build-test`: the test image with its reference measurements, computed from its files (no
 * boot). Only when they cannot be made (the policy's `unpredictable` says why) does one learn boot
 * record golden values instead, unless kept from an identical build or --no-golden.
 */
async function buildTest(
  stateDir: string,
  flags: Flags,
  signal: AbortSignal,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<number> {
  const t = Date.now();
  const info = buildTestImage(stateDir, { ovmfCode: findOvmf()?.code ?? null });
  const built = readPolicy(join(stateDir, 'images', info.name));
  const references = built?.references ? referencesSummary(built.references) : null;
  if (!references)
    err(`vm-manager: no reference measurements for ${info.name}: ${built?.unpredictable ?? 'unknown'}; golden values are the fallback`);
  const kept =
    !references && Object.keys(built?.golden.sha256 ?? {}).length > 0 && firmwareChange(built, findOvmf()?.code ?? null) === null;
  const golden =
    references || flags['no-golden'] === true || kept
      ? null
      : await learnOffline(stateDir, info.name, (s) => err(`vm-manager: ${s}`), signal);
  out(JSON.stringify({ ...info, seconds: (Date.now() - t) / 1000, references, golden: golden?.golden ?? null, goldenKept: kept }));
  return 0;
}
