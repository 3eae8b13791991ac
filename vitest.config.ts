import { defineConfig } from 'vitest/config';

/**
 * Projects:
 * - node: main/, shared/ and everything that talks to real system parts (SQLite files, sh/dash/busybox,
 *   QEMU + swtpm, sshd on loopback, the Skytap emulator). Files: test/**\/*.test.ts.
 * - renderer: React components under happy-dom. Files: test/renderer/**\/*.test.tsx.
 * - keyring: tests that need a real Secret Service; run through scripts/with-keyring.sh.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          environment: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/keyring/**', 'test/renderer/**', 'test/e2e/**', 'test/bench/**', 'node_modules/**'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
          pool: 'forks',
          // One file at a time: the system suites boot QEMU guests and time real processes, and two
          // of them side by side on a 2-core machine starve each other into timeouts.
          maxWorkers: 1,
        },
      },
      {
        test: {
          name: 'renderer',
          environment: 'happy-dom',
          include: ['test/renderer/**/*.test.tsx', 'test/renderer/**/*.test.ts'],
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
