import { defineConfig } from 'electron-vite';
import react from '@vitejs/plugin-react';
import { cpSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Plugin } from 'vite';
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

/** The vm-manager's non-code files (guest init, metadata proxy, quote script), found at run time by main/vm-manager/assets.ts. */
function copyVmManagerAssets(): Plugin {
  return {
    name: 'povdesk-vm-manager-assets',
    closeBundle() {
      const to = resolve(__dirname, 'out/main/vm-manager-assets');
      cpSync(resolve(__dirname, 'main/vm-manager/guest'), resolve(to, 'guest'), { recursive: true });
      cpSync(resolve(__dirname, 'main/vm-manager/attest/guest-quote.sh'), resolve(to, 'attest/guest-quote.sh'));
    },
  };
}

export default defineConfig({
  main: {
    plugins: [copyVmManagerAssets()],
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
