/**
 * The image work of the vm.* methods: the test image built by the local manager's CLI, one learn
 * boot that proposes an image's golden values, saving them, and its reference measurements made
 * again from its files. Each answer is the contract's view of the image (./views).
 */
import { AppError } from '../../../shared/contract/errors';
import type { VmImage, VmLearnedGolden } from '../../../shared/contract/vm';
import { GOLDEN_VM_SIZE, vmSizeLabel } from '../../../shared/golden-size';
import type { JobRunner } from '../jobs/runner';
import type { ManagerCalls } from './create-job';
import type { LocalManagerSupervisor } from './supervisor';
import { imageRef, imageView, learnedView } from './views';

type Call = ManagerCalls['call'];

/** Builds the test image with the local manager's CLI (`image build-test`), as a job. */
export function startBuildTestImage(jobs: JobRunner, supervisor: Pick<LocalManagerSupervisor, 'runCli'>): string {
  return jobs.start({ kind: 'vm.imageBuildTest', title: 'Build the test image', subject: 'vm:image:povdesk-test' }, async (job) => {
    job.progress(
      'building',
      null,
      'kernel, busybox and tpm2-tools into an initramfs, then its reference measurements from the files (seconds; no boot)',
    );
    const started = Date.now();
    const out = await supervisor.runCli(['image', 'build-test'], job.signal);
    const line = out.split('\n').find((l) => l.trim().startsWith('{'));
    let info: { name?: unknown; sizeBytes?: unknown } = {};
    try {
      info = line ? (JSON.parse(line) as typeof info) : {};
    } catch {
      info = {};
    }
    const name = typeof info.name === 'string' ? info.name : 'povdesk-test';
    const seconds = Math.round((Date.now() - started) / 100) / 10;
    job.log(`built image ${name} in ${seconds} s`);
    return { image: name, seconds, sizeBytes: typeof info.sizeBytes === 'number' ? info.sizeBytes : null };
  });
}

/** The learn job: one learn boot on the manager; the result is the proposal the page shows to confirm. */
export function startLearnGolden(jobs: JobRunner, call: Call, image: string, size: { cpus?: number; memoryMib?: number } = {}): string {
  const at = { cpus: size.cpus ?? GOLDEN_VM_SIZE.cpus, memoryMib: size.memoryMib ?? GOLDEN_VM_SIZE.memoryMiB };
  const sized = vmSizeLabel(at.cpus, at.memoryMib);
  return jobs.start(
    { kind: 'vm.learnGolden', title: `Learn golden values of ${image} at ${sized}`, subject: `vm:image:${image}` },
    async (job) => {
      job.progress(
        'booting',
        null,
        `one boot of ${image} at ${sized} in learn mode (about a minute under TCG); nothing is saved until you confirm`,
      );
      const learning = call('POST learn-golden', async (c) => learnedView(await c.learnGolden(image, at)));
      const cancelled = new Promise<never>((_, reject) =>
        job.signal.addEventListener(
          'abort',
          () =>
            reject(
              new AppError(
                'cancelled',
                `cancelled; nothing was saved (the learn boot of ${image} ends on the vm-manager, which deletes its VM)`,
              ),
            ),
          { once: true },
        ),
      );
      learning.catch(() => {}); // after a cancel its answer is of no use
      const learned = await Promise.race([learning, cancelled]);
      job.log(`learned ${Object.keys(learned.golden).length} golden values of ${image} at ${sized} in ${learned.seconds} s`);
      return learned;
    },
  );
}

/** The image's reference measurements made again from its files by the manager (no boot). */
export function remakeReferences(call: Call, imageName: string): Promise<VmImage> {
  return call('POST references', async (c) => {
    await c.remakeReferences(imageName);
    const all = await c.images();
    const image = all.find((i) => imageRef(i, all) === imageName);
    if (!image) throw new AppError('not_found', `image ${imageName} is gone after its references were made again`);
    return imageView(image, all);
  });
}

export function saveGolden(
  call: Call,
  args: Pick<VmLearnedGolden, 'image' | 'golden' | 'firmware'> & { cpus?: number; memoryMib?: number },
): Promise<VmImage> {
  return call('PUT golden', async (c) => {
    await c.saveGolden(args.image, args.golden, args.firmware, {
      cpus: args.cpus ?? GOLDEN_VM_SIZE.cpus,
      memoryMib: args.memoryMib ?? GOLDEN_VM_SIZE.memoryMiB,
    });
    const all = await c.images();
    const image = all.find((i) => imageRef(i, all) === args.image);
    if (!image) throw new AppError('not_found', `image ${args.image} is gone after saving its golden values`);
    return imageView(image, all);
  });
}
