import type { vmMethods } from '../../../shared/contract/vm';
import type { VmApp } from '../../services/vm/service';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';
import type { DiagnosticsSection } from './core';

/** "Copy diagnostics" section: the vm-manager's host report (or why there is none). */
export function vmDiagnostics(vm: VmApp): DiagnosticsSection {
  return async () => {
    try {
      const h = await vm.host();
      const lines = [
        `endpoint ${h.endpoint} (${h.mode})`,
        `host ${h.hostname}, kernel ${h.kernel}, ${h.cpus} CPUs, ${Math.round(h.memoryBytes / 1024 ** 2)} MiB`,
        `accelerator ${h.accelerator.chosen ?? 'none'}: ${h.accelerator.reason}`,
        ...(h.accelerator.warning ? [`warning: ${h.accelerator.warning}`] : []),
        ...h.accelerator.probes.map((p) => `probe ${p.accel}: ${p.result} (${p.detail})`),
        ...h.tools.map((t) => `${t.name}: ${t.found ? (t.version ?? 'found') : `missing (${t.error ?? ''})`}`),
        `OVMF ${h.ovmfCode ?? 'missing'}; guest kernel ${h.guestKernel ?? 'missing'}`,
        `ready ${h.ready}`,
        ...h.missing.map((m) => `missing ${m.what}: ${m.install}`),
      ];
      return ['vm-manager host report', lines.join('\n')];
    } catch (e) {
      return ['vm-manager host report', `unavailable: ${(e as Error).message}`];
    }
  };
}

export function vmHandlers({ vm: app }: Pick<Services, 'vm'>): DomainHandlers<typeof vmMethods> {
  return {
    'vm.connection': () => app.connection(),
    'vm.setConnection': (args) => app.setConnection(args),
    'vm.host': (args) => app.host(args.recheck ?? false),
    'vm.images': async () => ({ images: await app.images() }),
    'vm.list': async () => ({ vms: await app.list() }),
    'vm.get': async (args) => ({ vm: await app.get(args.id) }),
    'vm.create': async (args) => ({ jobId: app.create(args) }),
    'vm.start': async (args) => ({ vm: await app.action(args.id, 'start') }),
    'vm.stop': async (args) => ({ vm: await app.action(args.id, 'stop') }),
    'vm.reboot': async (args) => ({ vm: await app.action(args.id, 'reboot') }),
    'vm.delete': async (args) => {
      await app.delete(args.id);
      return { ok: true as const };
    },
    'vm.console': async (args) => ({ id: args.id, lines: await app.console(args.id, args.lines) }),
    'vm.consoleFollow': async (args) => ({ id: args.id, text: await app.follow(args.id, args.lines ?? 200) }),
    'vm.attestation': (args) => app.attestation(args.id),
    'vm.imageBuildTest': async () => ({ jobId: app.buildTestImage() }),
    'vm.learnGolden': async (args) => ({ jobId: app.learnGolden(args.image) }),
    'vm.saveGolden': async (args) => ({ image: await app.saveGolden(args) }),
  };
}
