import { defineConfig } from 'vitest/config';

/**
 * The suites that boot QEMU guests, build or bake images, or start the whole built app: they run
 * one file at a time, because two of them side by side on a 2-core machine starve each other into
 * timeouts. Each keeps about one core busy (a TCG guest with one vCPU, mmdebstrap, the libguestfs
 * appliance), so scripts/test.sh can run the other suites beside them (POVDESK_TEST_LANES=1;
 * docs/decisions/tests.md, "Two lanes").
 * A new file that boots a guest belongs here.
 */
const SYSTEM = [
  'test/bake/**',
  'test/vm-manager/**',
  'test/lab/**',
  'test/mcp/**',
  'test/vm/**',
  'test/vm-console/**',
  'test/packaging/boot-check.test.ts',
  'test/pov/local-real-vm.test.ts',
  'test/owner/fresh-home.test.ts',
];
/**
 * The system suites that run in lane 2 after the node and renderer projects (scripts/test.sh), so
 * that both lanes keep a core busy to the end: guests of the test image only, which needs no cache
 * lane 1 builds (the Debian base, the control-node image).
 */
const SYSTEM_LANE2 = [
  'test/vm-manager/attested-boot.test.ts',
  'test/vm-manager/trust.test.ts',
  'test/vm-manager/networks.test.ts',
  'test/vm/handlers.test.ts',
  'test/vm-manager/kill-stages.test.ts',
  'test/vm-manager/crash.test.ts',
  'test/pov/local-real-vm.test.ts',
  'test/vm-manager/attest/measured-boot.test.ts',
  'test/vm-console/console.test.ts',
  'test/mcp/local-pov.test.ts',
];
const NOT_NODE = ['test/keyring/**', 'test/renderer/**', 'test/e2e/**', 'test/bench/**', 'node_modules/**'];

/**
 * Projects:
 * - system: the suites above (real QEMU + swtpm, mmdebstrap, libguestfs, the built daemon), one file at a time.
 * - system-lane2: the SYSTEM_LANE2 share of them, run in lane 2 (the same settings).
 * - node: main/, shared/ and everything else that talks to real system parts (SQLite files,
 *   sh/dash/busybox, sshd on loopback, the Skytap emulator). Files: test/**\/*.test.ts.
 * - renderer: React components under happy-dom. Files: test/renderer/**\/*.test.tsx.
 * - keyring: tests that need a real Secret Service; run through scripts/with-keyring.sh.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'system',
          environment: 'node',
          include: SYSTEM.map((g) => (g.endsWith('**') ? `${g}/*.test.ts` : g)),
          exclude: [...NOT_NODE, ...SYSTEM_LANE2],
          // a TCG boot takes 15-25 s alone and longer beside the other lane: 30 s was too tight
          testTimeout: 120_000,
          hookTimeout: 120_000,
          pool: 'forks',
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: 'system-lane2',
          environment: 'node',
          include: SYSTEM_LANE2,
          testTimeout: 120_000,
          hookTimeout: 120_000,
          pool: 'forks',
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: 'node',
          environment: 'node',
          include: ['test/**/*.test.ts'],
          exclude: [...NOT_NODE, ...SYSTEM],
          testTimeout: 30_000,
          hookTimeout: 120_000,
          pool: 'forks',
          // One file at a time here too: with POVDESK_TEST_LANES=1 this project runs beside the system suites.
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: 'renderer',
          environment: 'happy-dom',
          include: ['test/renderer/**/*.test.tsx', 'test/renderer/**/*.test.ts'],
          setupFiles: ['test/renderer/dialog-polyfill.ts'],
          testTimeout: 20_000,
        },
        esbuild: { jsx: 'automatic' },
      },
      {
        test: {
          name: 'keyring',
          environment: 'node',
          include: ['test/keyring/**/*.test.ts'],
          testTimeout: 30_000,
          pool: 'forks',
        },
      },
    ],
  },
});
