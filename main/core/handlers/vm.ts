import { existsSync } from 'node:fs';
import type { vmMethods } from '../../../shared/contract/vm';
import { VmApp } from '../../services/vm/service';
import { VmManagerSupervisor } from '../../services/vm/supervisor';
import type { Base } from '../base';
import type { DiagnosticsSection } from './core';
import type { DomainHandlers } from './skytap';

const apps = new WeakMap<Base, VmApp>();

/** The one VmApp of a Base (its supervisor starts or reattaches the local vm-manager on first use). */
export function vmAppFor(base: Base): VmApp {
  let app = apps.get(base);
  if (!app) {
    const supervisor = new VmManagerSupervisor({ home: base.home, log: base.log, env: base.env });
    app = new VmApp({
      settings: base.settings,
      secrets: base.secrets,
      jobs: base.jobs,
      hub: base.hub,
      log: base.log,
      supervisor,
    });
    apps.set(base, app);
    // The manager and its VMs outlive the app on purpose; only the console followers stop.
    const a = app;
    base.onClose(() => a.close());
    // An app that used local VMs before reattaches at launch (or restarts a manager that died, which
    // then reattaches to its VMs); one that never did starts the manager on first use only.
    if (base.role === 'app' && a.mode() === 'local' && existsSync(supervisor.endpointFile)) {
      supervisor.ensure().catch((e: Error) => base.log.warn('local vm-manager not reattached at launch', { error: e.message }));
    }
  }
  return app;
}

/** "Copy diagnostics" section: the vm-manager's host report (or why there is none). */
export function vmDiagnostics(base: Base): DiagnosticsSection {
  return async () => {
    try {
      const h = await vmAppFor(base).host();
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

export function vmHandlers(base: Base, app: VmApp = vmAppFor(base)): DomainHandlers<typeof vmMethods> {
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
    'vm.login': () => app.login(),
    'vm.logout': async () => (await app.logout(), { ok: true as const }),
    'vm.exec': (args) => app.exec(args.id, args.command),
    'vm.forward': async (args) => ({ forward: await app.forward(args.id, args.port) }),
    'vm.forwards': async (args) => ({ forwards: app.forwards.list(args.id) }),
    'vm.unforward': async (args) => (await app.forwards.close(args.forwardId), { ok: true as const }),
  };
}
