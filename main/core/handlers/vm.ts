import type { vmMethods } from '../../../shared/contract/vm';
import type { Services } from '../base';
import type { DomainHandlers } from '../dispatch';

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
    'vm.learnGolden': async (args) => ({ jobId: app.learnGolden(args.image, { cpus: args.cpus, memoryMib: args.memoryMib }) }),
    'vm.saveGolden': async (args) => ({ image: await app.saveGolden(args) }),
    'vm.remakeReferences': async (args) => ({ image: await app.remakeReferences(args.image) }),
    'vm.login': () => app.login(),
    'vm.logout': async () => (await app.logout(), { ok: true as const }),
    'vm.exec': (args) => app.exec(args.id, args.command),
    'vm.forward': async (args) => ({ forward: await app.forward(args.id, args.port) }),
    'vm.forwards': async (args) => ({ forwards: app.forwards.list(args.id) }),
    'vm.unforward': async (args) => (await app.forwards.close(args.forwardId), { ok: true as const }),
  };
}
