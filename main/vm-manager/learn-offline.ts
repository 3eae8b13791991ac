/**
 * The learn boot `image build-test` runs for an image without reference measurements: a private
 * manager (its own state dir and metadata socket, so a manager serving `stateDir` is not
 * disturbed). It lives apart from golden.ts because it starts a whole manager (server.ts), which
 * the REST layer (api.ts → golden.ts) must not import.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VmmError } from './errors';
import { learnWith, saveGolden, type LearnedGolden } from './golden';
import { getImage, imagesDir } from './images';
import { serve } from './server';
import { GOLDEN_VM_SIZE } from '../../shared/golden-size';

/** One learn boot on a private copy of the image, then the values are saved for it in `stateDir`. */
export async function learnOffline(
  stateDir: string,
  imageName: string,
  log?: (s: string) => void,
  signal?: AbortSignal,
): Promise<LearnedGolden> {
  const stopped = () =>
    new VmmError(
      'unavailable',
      `the learn boot of ${imageName} was stopped (${String(signal?.reason ?? 'aborted')}); its VM is gone and no golden values were saved`,
    );
  if (signal?.aborted) throw stopped();
  const tmp = mkdtempSync(join(tmpdir(), 'povdesk-learn-'));
  try {
    cpSync(getImage(stateDir, imageName).dir, join(imagesDir(tmp), imageName), { recursive: true });
    const m = await serve({ stateDir: tmp, socket: join(tmp, 'api.sock'), log, dieWithParent: true });
    try {
      // Stopped mid-boot (the job cancelled, the app quitting): the finally below takes the VM and
      // its swtpm down. Without this the process died on the signal and left them running.
      const learning = learnWith(m.vms, tmp, imageName);
      learning.catch(() => {});
      const learned = await new Promise<LearnedGolden>((resolve, reject) => {
        const onAbort = () => reject(stopped());
        if (signal?.aborted) onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        learning.then(resolve, reject).finally(() => signal?.removeEventListener('abort', onAbort));
      });
      saveGolden(stateDir, imageName, learned.golden, learned.firmware, GOLDEN_VM_SIZE);
      return learned;
    } finally {
      // Every VM of this private manager is the learn boot's: deleted in any state (a delete also
      // removes its folder, which stopVms would leave for the throwaway state dir's removal).
      for (const vm of m.vms.list()) await m.vms.delete(vm.id).catch(() => {});
      await m.close({ stopVms: true });
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
