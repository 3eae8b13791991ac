/**
 * `povdesk vm-manager test [--state-dir D | --server URL [--token-file F]] [--skip-vm] [--vm-timeout 6m] [--image NAME]`:
 * the proof (main/vm-api/proof.ts) against this laptop's vm-manager. With --server, that manager
 * (its token from POVDESK_VMM_TOKEN or --token-file). Otherwise the manager the app started on the
 * state dir when it runs (its endpoint.json), else one started here for the proof and stopped after
 * it, with any VM the proof left. Exit 0 when every check passed, 1 when one failed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidExists } from '../lib/procs';
import { parseDuration, runProof, type ProofResult } from '../vm-api/proof';
import { VmmError } from './errors';
import { serve, type RunningManager } from './server';

export interface ProofCliOptions {
  stateDir: () => string;
  server?: string;
  token?: string;
  skipVm: boolean;
  vmTimeout?: string;
  image?: string;
  out: (s: string) => void;
  err: (s: string) => void;
}

/** The app's running manager on this state dir, from the endpoint.json its supervisor keeps (null: none runs). */
function runningManager(stateDir: string): { url: string; token: string; pid: number } | null {
  try {
    const ep = JSON.parse(readFileSync(join(stateDir, 'endpoint.json'), 'utf8')) as { url?: unknown; token?: unknown; pid?: unknown };
    if (
      typeof ep.url !== 'string' ||
      !/^http:\/\/127\.0\.0\.1:\d+$/.test(ep.url) ||
      typeof ep.token !== 'string' ||
      typeof ep.pid !== 'number'
    )
      return null;
    return pidExists(ep.pid) ? { url: ep.url, token: ep.token, pid: ep.pid } : null;
  } catch {
    return null;
  }
}

export async function runProofCli(o: ProofCliOptions): Promise<number> {
  const vmTimeoutMs = o.vmTimeout === undefined ? undefined : parseOrThrow(o.vmTimeout);
  let target: { url: string; token: string };
  let own: RunningManager | null = null;
  if (o.server) {
    if (!o.token)
      throw new VmmError('invalid_request', '--server needs its token: set POVDESK_VMM_TOKEN or pass --token-file <file> (chmod 600)');
    target = { url: o.server, token: o.token };
    o.out(`proving the vm-manager at ${o.server}`);
  } else {
    const stateDir = o.stateDir();
    const running = runningManager(stateDir);
    if (running) {
      target = running;
      o.out(`proving the running vm-manager at ${running.url} (pid ${running.pid}, ${stateDir})`);
    } else {
      // serve() refuses a host that cannot run VMs, naming what is missing: that is the readiness answer.
      own = await serve({ stateDir, port: 0, log: (s) => o.err(`vm-manager: ${s}`) });
      target = { url: own.url, token: own.token };
      o.out(`proving a vm-manager started for this run at ${own.url} (${stateDir}; stopped at the end)`);
    }
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let result: ProofResult;
  try {
    result = await runProof({
      ...target,
      skipVm: o.skipVm,
      ...(vmTimeoutMs ? { vmTimeoutMs } : {}),
      ...(o.image ? { image: o.image } : {}),
      out: o.out,
      signal: stop.signal,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await own?.close({ stopVms: true });
  }
  if (result.durations) {
    const d = result.durations;
    o.out(
      `install: ${d.installSeconds === null ? 'none (no installer phase)' : `${d.installSeconds.toFixed(1)} s`}; ` +
        `boot: ${d.bootSeconds.toFixed(1)} s`,
    );
  }
  const failed = result.checks.filter((c) => c.result === 'fail').map((c) => c.name);
  o.out(
    failed.length ? `proof FAILED: ${failed.join(', ')}` : `proof passed (${result.checks.filter((c) => c.result === 'ok').length} checks)`,
  );
  return failed.length ? 1 : 0;
}

function parseOrThrow(text: string): number {
  try {
    return parseDuration(text);
  } catch (e) {
    throw new VmmError('invalid_request', (e as Error).message);
  }
}
