/**
 * The Resource Broker host's check (control-node-vm.md: "a Windows Server 2019 or 2022 x64 guest
 * with WinRM enabled, on the same automatic network" as the control node), from what the platform
 * reports. Skytap has no OS version field: the only hint is hardware.guestOS, a VMware guest
 * identifier (`windows2019srv-64` is Windows Server 2019, `windows2019srvNext-64` Windows Server
 * 2022). A clear mismatch refuses the broker step with the reason; what cannot be told from here
 * (no guestOS, an identifier this list does not know, WinRM behind the environment's private
 * network) is said in the job's log and does not block.
 */
export interface BrokerHostFacts {
  name: string;
  /** The platform's own OS words (Skytap's hardware.guestOS). */
  guestOs: string | null;
  networkType: 'automatic' | 'manual' | null;
  networkId: string | null;
  networkName: string | null;
}

export interface BrokerCheck {
  /** Set when the VM cannot host the broker: the step fails with it. */
  refusal: string | null;
  /** What could not be told from here (logged as warnings). */
  unknowns: string[];
}

/** VMware guest identifiers of the Windows Server releases the broker installs on. */
const SUPPORTED: Record<string, string> = {
  'windows2019srv-64': 'Windows Server 2019',
  'windows2019srvnext-64': 'Windows Server 2022',
};

/**
 * A 64-bit server identifier of 2019 or later that the list above does not name (a later vSphere's
 * id): not refused, said. Everything else Windows (windows9srv-64 is 2016, desktops, 32-bit) is.
 */
function laterServer(id: string): boolean {
  const year = /^windows(\d{4})srv/.exec(id)?.[1];
  return year !== undefined && Number(year) >= 2019 && id.endsWith('-64');
}

export function checkBrokerHost(vm: BrokerHostFacts, controlNode: BrokerHostFacts | null): BrokerCheck {
  const unknowns: string[] = [];
  const id = (vm.guestOs ?? '').trim().toLowerCase().replace(/_/g, '-');
  if (id === '') {
    unknowns.push(`${vm.name} reports no guest OS: whether it is Windows Server 2019 or 2022 x64 cannot be told from here`);
  } else if (!SUPPORTED[id]) {
    if (!id.startsWith('win')) {
      return {
        refusal: `${vm.name} reports guest OS ${vm.guestOs}, not Windows; the Resource Broker needs Windows Server 2019 or 2022 x64`,
        unknowns,
      };
    }
    if (!laterServer(id)) {
      return {
        refusal:
          `${vm.name} reports guest OS ${vm.guestOs}; the Resource Broker needs Windows Server 2019 or 2022 x64 (windows2019srv-64 ` +
          `or windows2019srvNext-64); name another VM as the Resource Broker host (name VM)`,
        unknowns,
      };
    }
    unknowns.push(`${vm.name} reports guest OS ${vm.guestOs}, which is not known to be Windows Server 2019 or 2022 x64`);
  }
  if (vm.networkType === 'manual') {
    return {
      refusal: `${vm.name} is on a manual network; the Resource Broker host must be on the control node's automatic network`,
      unknowns,
    };
  }
  if (controlNode && vm.networkId && controlNode.networkId && vm.networkId !== controlNode.networkId) {
    return {
      refusal:
        `${vm.name} is on ${vm.networkName ?? vm.networkId} and the control node ${controlNode.name} ` +
        `on ${controlNode.networkName ?? controlNode.networkId}; the Resource Broker host must be on the control node's network (the ` +
        `installer reaches it over WinRM from there)`,
      unknowns,
    };
  }
  if (!vm.networkId || !controlNode?.networkId)
    unknowns.push(`whether ${vm.name} shares the control node's network cannot be told (the platform reports no network)`);
  unknowns.push(
    `WinRM on ${vm.name} (5985/5986) is reached from the control node, inside the environment: it cannot be checked from here; ` +
      `the installer's result says`,
  );
  return { refusal: null, unknowns };
}
