import { defineConfig } from 'electron-vite';
import react from '@vitejs/plugin-react';
import { cpSync } from 'node:fs';
import { resolve } from 'node:path';
import { build as viteBuild, type Plugin } from 'vite';
import { CONTENT_SECURITY_POLICY } from './shared/csp';

/**
 * The CSP as a meta tag in the built page: Electron loads it from file://, where response headers
 * (the browser-mode host sends the same policy as a header) are not there to carry it. Build only:
 * the dev server's React refresh preamble is an inline script.
 */
function cspMeta(): Plugin {
  return {
    name: 'povdesk-csp-meta',
    apply: 'build',
    transformIndexHtml: () => [{ tag: 'meta', attrs: { 'http-equiv': 'Content-Security-Policy', content: CONTENT_SECURITY_POLICY }, injectTo: 'head-prepend' }],
  };
}

function copyVmManagerAssetsTo(to: string): void {
  cpSync(resolve(__dirname, 'main/vm-manager/guest'), resolve(to, 'guest'), { recursive: true });
  cpSync(resolve(__dirname, 'main/vm-manager/attest/guest-quote.sh'), resolve(to, 'attest/guest-quote.sh'));
}

/** The vm-manager's non-code files (guest init, metadata proxy, quote script), found at run time by main/vm-manager/assets.ts. */
function copyVmManagerAssets(): Plugin {
  return {
    name: 'povdesk-vm-manager-assets',
    closeBundle() {
      copyVmManagerAssetsTo(resolve(__dirname, 'out/main/vm-manager-assets'));
    },
  };
}

/**
 * The vm-manager daemon as one self-contained file for the packaged app, out/vm-manager/vm-manager.mjs
 * (zod inlined, only node:* left as imports) with its guest files beside it. electron-builder ships
 * that folder outside the asar (electron-builder.yml extraResources): the daemon outlives the app,
 * so it must not read from an app.asar an update replaces, and QEMU reads the guest files directly.
 */
function bundleVmManagerDaemon(): Plugin {
  return {
    name: 'povdesk-vm-manager-daemon',
    apply: 'build',
    async closeBundle() {
      const outDir = resolve(__dirname, 'out/vm-manager');
      await viteBuild({
        configFile: false,
        logLevel: 'warn',
        ssr: { noExternal: true, target: 'node' },
        build: {
          ssr: resolve(__dirname, 'main/vm-manager/main.ts'),
          outDir,
          emptyOutDir: true,
          minify: false,
          target: 'node20',
          rollupOptions: { output: { format: 'es', entryFileNames: 'vm-manager.mjs', inlineDynamicImports: true } },
        },
      });
      copyVmManagerAssetsTo(resolve(outDir, 'vm-manager-assets'));
    },
  };
}

export default defineConfig({
  main: {
    plugins: [copyVmManagerAssets(), bundleVmManagerDaemon()],
    build: {
      outDir: 'out/main',
      // zod is ~100 small ES modules; bundled, the host's cold start skips opening and linking them.
      externalizeDeps: { exclude: ['zod'] },
      rollupOptions: {
        input: {
          index: resolve(__dirname, 'main/electron/index.ts'),
          cli: resolve(__dirname, 'main/cli/main.ts'),
          'vm-manager': resolve(__dirname, 'main/vm-manager/main.ts'),
        },
      },
    },
  },
  preload: {
    build: {
      outDir: 'out/preload',
      rollupOptions: {
        input: { index: resolve(__dirname, 'preload/index.ts') },
        // A sandboxed preload must be CommonJS.
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: resolve(__dirname, 'renderer'),
    plugins: [react(), cspMeta()],
    build: {
      outDir: resolve(__dirname, 'out/renderer'),
      minify: true,
      rollupOptions: { input: resolve(__dirname, 'renderer/index.html') },
    },
  },
});
