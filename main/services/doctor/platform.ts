import type { DoctorCheck } from '../../../shared/contract/doctor';
import type { VmManagerClient } from '../../vm-api/client';
import { ROUTES } from '../../vm-api/schemas';
import type { ControlPlane } from '../control-node/control-plane';
import { check, probe } from './checks';

/** The operations (id → "METHOD /path") a served OpenAPI document declares, read from JSON or from YAML text. */
export function declaredOperations(doc: string): Map<string, string> {
  const ops = new Map<string, string>();
  try {
    const paths = (JSON.parse(doc) as { paths?: Record<string, Record<string, { operationId?: string }>> }).paths ?? {};
    for (const [p, item] of Object.entries(paths))
      for (const [m, op] of Object.entries(item)) if (op?.operationId) ops.set(op.operationId, `${m.toUpperCase()} ${p}`);
    return ops;
  } catch {
    // YAML: two-space indented paths, four-space methods, operationId beneath (giantswarm's layout)
    let path = '';
    let verb = '';
    for (const line of doc.split('\n')) {
      const p = /^ {2}(\/[^:\s]*):\s*$/.exec(line);
      if (p) path = p[1]!;
      const v = /^ {4}(get|post|put|patch|delete):\s*$/.exec(line);
      if (v) verb = v[1]!.toUpperCase();
      const o = /^\s+operationId:\s*["']?([A-Za-z0-9_]+)/.exec(line);
      if (o && path && verb) ops.set(o[1]!, `${verb} ${path}`);
    }
    return ops;
  }
}

/** A remote vm-manager's host report and document, compared with the document the client speaks. */
export async function vmProbes(target: { client: VmManagerClient; url: string } | null): Promise<DoctorCheck[]> {
  if (!target) {
    const why = "the Local VMs page uses this laptop's vm-manager; connect a remote one to check it";
    return [check('vm.remote-host', 'this laptop', 'unknown', why), check('vm.remote-document', 'this laptop', 'unknown', why)];
  }
  const who = `vm-manager ${target.url}`;
  const out: DoctorCheck[] = [];
  out.push(
    ...(await probe('vm.remote-host', who, async () => {
      try {
        const h = await target.client.host();
        return check('vm.remote-host', who, 'confirmed', `GET /host in the document's shape (ready: ${String(h.ready)})`);
      } catch (e) {
        if (/not what giantswarm's vm-manager API document promises/.test((e as Error).message))
          return check('vm.remote-host', who, 'contradicted', (e as Error).message);
        throw e;
      }
    })),
  );
  out.push(
    ...(await probe('vm.remote-document', who, async () => {
      const served = declaredOperations(await target.client.openapi());
      if (served.size === 0) return check('vm.remote-document', who, 'contradicted', 'GET /openapi.yaml declares no operation');
      const differ: string[] = [];
      for (const [id, r] of Object.entries(ROUTES)) {
        const ours = `${r.method} ${r.path}`;
        const theirs = served.get(id);
        if (!theirs) differ.push(`${id} (${ours}) is missing`);
        else if (theirs !== ours) differ.push(`${id} is ${theirs}, not ${ours}`);
      }
      return differ.length
        ? check('vm.remote-document', who, 'contradicted', differ.join('; '))
        : check(
            'vm.remote-document',
            who,
            'confirmed',
            `all ${Object.keys(ROUTES).length} operations at the same paths (${served.size} served)`,
          );
    })),
  );
  return out;
}

export async function controlPlaneProbes(cp: { plane: ControlPlane; url: string } | null): Promise<DoctorCheck[]> {
  if (!cp)
    return [check('control-plane.spire', 'control plane', 'unknown', 'no control-plane URL and token are saved (Settings → Control node)')];
  const who = `control plane ${cp.url}`;
  return probe('control-plane.spire', who, async () => {
    const s = await cp.plane.spire();
    return check(
      'control-plane.spire',
      who,
      'confirmed',
      s ? `SPIRE offered: ${s.trustDomain} at ${s.serverAddress}` : 'answered, SPIRE not offered',
    );
  });
}
