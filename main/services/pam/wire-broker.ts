/**
 * Step 4 of wiring (./wire): the Resource Broker, installed by the control node's agent on the
 * Windows VM named as broker host (or the only one), once the host passes ./broker-check. No API
 * reports the broker's health: Password Safe answering behind it (./wire-password-safe) marks it done.
 */
import type { PamJob } from './types';
import { checkBrokerHost, type BrokerHostFacts } from './broker-check';
import type { Mark, PamPov, PamVm, Step, WireDeps } from './wire-types';

/** The Windows VM for the broker: the one named as broker host, else the only Windows VM. */
export function brokerVm(pov: PamPov): PamVm | { refusal: string } {
  const win = pov.vms.filter((v) => v.os === 'windows');
  if (pov.brokerHost) {
    const named = pov.vms.filter((v) => v.name.toLowerCase() === pov.brokerHost!.toLowerCase());
    if (named.length !== 1)
      return { refusal: `no single VM is called ${pov.brokerHost} (the Resource Broker host); fix the name (name VM)` };
    if (named[0]!.os !== 'windows')
      return { refusal: `${named[0]!.name} is not a Windows VM; the Resource Broker installs on Windows Server` };
    return named[0]!;
  }
  if (win.length === 1) return win[0]!;
  return {
    refusal: win.length
      ? `several Windows VMs (candidates: ${win.map((v) => v.name).join(', ')}); name the Resource Broker host`
      : 'the POV has no Windows VM for the Resource Broker',
  };
}

function hostFacts(v: PamVm): BrokerHostFacts {
  return {
    name: v.name,
    guestOs: v.guestOs ?? null,
    networkType: v.networkType ?? null,
    networkId: v.networkId ?? null,
    networkName: v.networkName ?? null,
  };
}

export async function wireBroker(d: WireDeps, job: PamJob, mark: Mark, step: Step) {
  if (!d.brokerInstallKey) {
    mark('broker', '', { state: 'skipped', error: 'no Resource Broker install key is saved (generate one in the Password Safe portal)' });
    return;
  }
  const vm = brokerVm(d.pov);
  if ('refusal' in vm) {
    mark('broker', '', { state: 'failed', error: vm.refusal });
    return;
  }
  if (!vm.ip) {
    mark('broker', '', { state: 'failed', error: `${vm.name} has no IP address yet; press Refresh VMs` });
    return;
  }
  const cn = d.pov.controlNodeVmId ? (d.pov.vms.find((v) => v.vmId === d.pov.controlNodeVmId) ?? null) : null;
  const check = checkBrokerHost(hostFacts(vm), cn ? hostFacts(cn) : null);
  if (check.refusal) {
    mark('broker', '', { state: 'failed', error: check.refusal });
    return;
  }
  for (const u of check.unknowns) job.log(`Resource Broker host: ${u}`, 'warn');
  if (d.repo.artifact(d.pov.id, 'broker')?.state === 'done') return; // verified earlier: nothing to redo
  await step('broker', '', 'Resource Broker', async () => {
    if (!d.agent || !d.pov.agentId) {
      mark('broker', '', { state: 'waiting', detail: vm.name, error: 'the control node is not enrolled yet; install it, then Wire again' });
      return;
    }
    const r = await d.agent.installBroker(d.pov.agentId, vm.ip!, d.brokerInstallKey!, job.signal);
    mark('broker', '', { state: 'waiting', remote_id: vm.vmId, detail: vm.name, error: null });
    job.log(`asked the control node to run the Resource Broker installer on ${vm.name} (${r.state}); no API reports broker health`);
  });
}
