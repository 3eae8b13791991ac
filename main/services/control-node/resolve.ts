/**
 * Which VM of a POV is the control node. A pure function over what the POV knows; the order and
 * the reasons are the spec's (docs/control-node.md):
 *  1. the name the user typed: exact, case-insensitive; refused when nothing matches (never a guess)
 *  2. the VM that is already the enrolled control node
 *  3. the only Linux VM, excluding the Entitle agent host and the Resource Broker host
 *     (an unknown OS is not Linux)
 *  4. a VM called `broker` when several Linux VMs remain
 *  5. otherwise refuse, naming the candidates
 */
import type { GuestOs } from '../../../shared/contract/values';
export type { GuestOs };

export interface ResolveVm {
  id: string;
  name: string;
  os: GuestOs;
  roles?: readonly string[];
}

export interface ResolveInput {
  typedName?: string | null;
  enrolledVmId?: string | null;
  vms: readonly ResolveVm[];
  entitleHostName?: string | null;
  brokerHostName?: string | null;
}

export type ResolveStep = 'typed' | 'enrolled' | 'only-linux' | 'broker-name';

export type Resolution = { vm: ResolveVm; step: ResolveStep } | { refusal: { reason: string; candidates: string[] } };

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export function resolveControlNode(input: ResolveInput): Resolution {
  const { vms } = input;
  const typed = input.typedName?.trim();
  if (typed) {
    const hits = vms.filter((v) => same(v.name, typed));
    if (hits.length === 1) return { vm: hits[0]!, step: 'typed' };
    if (hits.length > 1) {
      return {
        refusal: {
          reason: `${hits.length} VMs are called "${typed}"; rename one in Skytap so the control node is unambiguous`,
          candidates: hits.map((v) => v.name),
        },
      };
    }
    return {
      refusal: {
        reason: `no VM is called "${typed}" (the name must match exactly, ignoring case); use "name VM" to pick one of the candidates`,
        candidates: vms.map((v) => v.name),
      },
    };
  }

  if (input.enrolledVmId) {
    const enrolled = vms.find((v) => v.id === input.enrolledVmId);
    if (enrolled) return { vm: enrolled, step: 'enrolled' };
  }

  const excluded = (v: ResolveVm) =>
    (input.entitleHostName && same(v.name, input.entitleHostName)) ||
    (input.brokerHostName && same(v.name, input.brokerHostName)) ||
    v.roles?.includes('entitle-agent') ||
    v.roles?.includes('resource-broker');
  const linux = vms.filter((v) => v.os === 'linux' && !excluded(v));
  if (linux.length === 1) return { vm: linux[0]!, step: 'only-linux' };

  if (linux.length > 1) {
    const broker = linux.filter((v) => same(v.name, 'broker'));
    if (broker.length === 1) return { vm: broker[0]!, step: 'broker-name' };
    return {
      refusal: {
        reason: `${linux.length} Linux VMs could be the control node and none is called "broker"; use "name VM" to pick one`,
        candidates: linux.map((v) => v.name),
      },
    };
  }

  const unknown = vms.filter((v) => v.os === 'unknown' && !excluded(v));
  const hint = unknown.length
    ? `; ${unknown.length} VM(s) have an unknown OS: set it in the OS column of the POV's VMs tab, or use "name VM"`
    : '; use "name VM" to pick one';
  return {
    refusal: {
      reason: `no Linux VM is available for the control node${hint}`,
      candidates: (unknown.length ? unknown : vms).map((v) => v.name),
    },
  };
}
