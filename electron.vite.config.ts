import { defineConfig } from 'electron-vite';
import react from '@vitejs/plugin-react';
import { cpSync, readFileSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
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
    transformIndexHtml: () => [
      { tag: 'meta', attrs: { 'http-equiv': 'Content-Security-Policy', content: CONTENT_SECURITY_POLICY }, injectTo: 'head-prepend' },
    ],
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
          target: 'node24',
          rollupOptions: { output: { format: 'es', entryFileNames: 'vm-manager.mjs', inlineDynamicImports: true } },
        },
      });
      copyVmManagerAssetsTo(resolve(outDir, 'vm-manager-assets'));
    },
  };
}

/** The packages the app `require`s at run time (main/services/lazy.ts, keytar): left out of bundles. */
const RUNTIME_REQUIRED = ['better-sqlite3', 'keytar', 'ssh2', 'undici', 'ws'];
/** Dependencies used only to build a package (headers, the prebuilt-binary fetcher) or optional addons not built. */
const BUILD_ONLY = new Set(['node-addon-api', 'prebuild-install', 'nan', 'cpu-features']);

/**
 * Copies `names` and the packages they depend on at run time from node_modules into `to`, without
 * sources, tests and other platforms' prebuilt addons: what a bundle's `require`s need beside it.
 */
function copyRuntimePackages(names: string[], to: string): void {
  const seen = new Set<string>();
  const prebuild = `${process.platform}-${process.arch}.node`;
  const queue = [...names];
  while (queue.length) {
    const name = queue.pop()!;
    if (seen.has(name) || BUILD_ONLY.has(name)) continue;
    seen.add(name);
    const from = resolve(__dirname, 'node_modules', name);
    const meta = JSON.parse(readFileSync(resolve(from, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    queue.push(...Object.keys(meta.dependencies ?? {}));
    cpSync(from, resolve(to, name), {
      recursive: true,
      filter: (src) => {
        const rel = relative(from, src).split(/[\\/]/);
        if (['src', 'deps', 'test', 'tests', 'docs', 'benchmark', 'examples', 'node_modules', '.github'].includes(rel[0]!)) return false;
        if (rel[0] === 'prebuilds' && rel.length > 1) return rel[1] === prebuild;
        if (rel[0] === 'build' && rel.length > 1)
          return rel[1] === 'Release' && (rel.length === 2 || (rel.length === 3 && src.endsWith('.node')));
        return !/\.(map|d\.ts|gyp|cc|h)$/.test(basename(src));
      },
    });
  }
}

/**
 * The `povdesk` CLI for the packaged app, out/cli/: its code bundled (code-split, so the lazy loads
 * stay lazy) with the packages it `require`s at run time copied beside it in out/cli/node_modules
 * (better-sqlite3 and keytar are Node-API addons). electron-builder ships the folder outside the
 * asar, where the app's runtime runs it under ELECTRON_RUN_AS_NODE: importing ES modules from inside
 * app.asar is not something to rely on (docs/decisions/packaging.md, "The povdesk command ships inside the app").
 */
function bundleCli(): Plugin {
  return {
    name: 'povdesk-cli',
    apply: 'build',
    async closeBundle() {
      await viteBuild({
        configFile: false,
        logLevel: 'warn',
        ssr: { noExternal: true, external: RUNTIME_REQUIRED, target: 'node' },
        // the xterm packages are imported as CommonJS (a default import), as Node resolves them
        resolve: {
          alias: {
            '@xterm/headless': resolve(__dirname, 'node_modules/@xterm/headless/lib-headless/xterm-headless.js'),
            '@xterm/addon-serialize': resolve(__dirname, 'node_modules/@xterm/addon-serialize/lib/addon-serialize.js'),
          },
        },
        build: {
          ssr: resolve(__dirname, 'main/cli/main.ts'),
          outDir: resolve(__dirname, 'out/cli'),
          emptyOutDir: true,
          minify: false,
          target: 'node24',
          rollupOptions: {
            external: RUNTIME_REQUIRED,
            output: { format: 'es', entryFileNames: 'povdesk-cli.mjs', chunkFileNames: 'chunks/[name]-[hash].mjs' },
          },
        },
      });
      copyRuntimePackages(RUNTIME_REQUIRED, resolve(__dirname, 'out/cli/node_modules'));
    },
  };
}

export default defineConfig({
  main: {
    plugins: [copyVmManagerAssets(), bundleVmManagerDaemon(), bundleCli()],
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
