/**
 * The size a learn boot runs at (giantswarm's defaults, so VMs made without a size match): golden
 * values hold for it only. Measured (test/vm-manager/attested-boot.test.ts): another memory size
 * moves PCR 0 and PCR 4 (QEMU places the initrd by RAM size), another CPU count moves PCR 0, so an
 * attested VM of another size waits in attesting with a golden mismatch unless a learn boot ran at
 * that size too (policy.json's golden_sizes). No zod here: the renderer and the vm-manager daemon
 * import this file.
 */
export const GOLDEN_VM_SIZE = { cpus: 2, memoryMiB: 2048 } as const;

/** Whether a VM of this size is at GOLDEN_VM_SIZE, whose values live in policy.json's `golden`. */
export const isGoldenVmSize = (cpus: number, memoryMiB: number) => cpus === GOLDEN_VM_SIZE.cpus && memoryMiB === GOLDEN_VM_SIZE.memoryMiB;

const cpuText = (cpus: number) => `${cpus} CPU${cpus === 1 ? '' : 's'}`;
const size = (cpus: number, memoryMiB: number) => `${cpuText(cpus)} and ${memoryMiB} MiB`;
/** A VM size as labels and job titles show it: "2 CPUs, 2048 MiB". */
export const vmSizeLabel = (cpus: number, memoryMiB: number) => `${cpuText(cpus)}, ${memoryMiB} MiB`;

/**
 * Null when an attested VM of this size can match what a learn boot measured (the default size, or
 * one of `learnedAt`: the image's other sizes with golden values); else why not, and what to do.
 */
export function goldenSizeWarning(
  cpus: number,
  memoryMiB: number,
  learnedAt: readonly { cpus: number; memoryMib: number }[] = [],
): string | null {
  if (isGoldenVmSize(cpus, memoryMiB)) return null;
  if (learnedAt.some((s) => s.cpus === cpus && s.memoryMib === memoryMiB)) return null;
  const learned = [GOLDEN_VM_SIZE, ...learnedAt.map((s) => ({ cpus: s.cpus, memoryMiB: s.memoryMib }))]
    .map((s) => size(s.cpus, s.memoryMiB))
    .join(', ');
  return (
    `golden values were learned at ${learned}, and the PCRs move with the VM's size: ` +
    `at ${size(cpus, memoryMiB)} the quotes will not match and the VM will wait in attesting. ` +
    `Learn golden values at ${size(cpus, memoryMiB)} (Local VMs, Images), create it ` +
    `at ${size(GOLDEN_VM_SIZE.cpus, GOLDEN_VM_SIZE.memoryMiB)}, or create it without attestation`
  );
}
