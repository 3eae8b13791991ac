import type { Terminal } from '@xterm/xterm';

/**
 * How a terminal draws: xterm's WebGL renderer where the window has a real GPU, its DOM renderer
 * elsewhere (issue 16). The DOM renderer lays out and paints on the page's main thread, the thread
 * xterm's parser also needs; with a GPU the WebGL renderer draws each frame as a few GL calls. A
 * software WebGL (SwiftShader, llvmpipe, Windows' Basic Render Driver) is much slower than the DOM
 * renderer (3 MB/s against ~40 measured here), so Automatic uses WebGL only when it is hardware.
 * A lost GPU context (a driver reset, or Chromium's limit of 16 contexts per page reached by many
 * tabs) puts that terminal back on the DOM renderer with its buffer intact.
 */
export type TermRendererPref = 'auto' | 'webgl' | 'dom';
export interface TermRendererChoice {
  kind: 'webgl' | 'dom';
  /** Why, in words an SE can act on (shown beside the terminal and in Settings). */
  why: string;
}
export type GlProbe = { webgl2: false; why: string } | { webgl2: true; renderer: string; software: boolean };

export const TERM_RENDERER_PREFS: readonly TermRendererPref[] = ['auto', 'webgl', 'dom'];
const PREF_KEY = 'povdesk.terminalRenderer';
/** Renderer strings of WebGL implementations that draw on the CPU. */
const SOFTWARE_GL = /swiftshader|llvmpipe|softpipe|lavapipe|software|basic render driver/i;

export function isSoftwareGl(renderer: string): boolean {
  return SOFTWARE_GL.test(renderer);
}

/** The SE's choice in Settings; kept in this window's storage (it is about this display's GPU). */
export function termRendererPref(): TermRendererPref {
  try {
    const v = globalThis.localStorage?.getItem(PREF_KEY);
    return TERM_RENDERER_PREFS.includes(v as TermRendererPref) ? (v as TermRendererPref) : 'auto';
  } catch {
    return 'auto';
  }
}

const prefListeners = new Set<(pref: TermRendererPref) => void>();

/**
 * Saves the SE's choice and tells whoever draws terminals (state/terminals.ts redraws every open
 * one at once). Settings call this without loading xterm, which stays out of the start-up bundle.
 */
export function setTermRendererPref(pref: TermRendererPref): void {
  if (!TERM_RENDERER_PREFS.includes(pref)) throw new Error(`unknown terminal renderer "${String(pref)}"`);
  try {
    globalThis.localStorage?.setItem(PREF_KEY, pref);
  } catch {
    // storage refused (private mode): the choice holds for this page only
  }
  for (const fn of prefListeners) fn(pref);
}

export function onTermRendererPref(fn: (pref: TermRendererPref) => void): () => void {
  prefListeners.add(fn);
  return () => prefListeners.delete(fn);
}

let probed: GlProbe | undefined;

/** Asks this window once for a WebGL2 context, and whether it is drawn by a GPU. */
export function probeGl(): GlProbe {
  if (probed) return probed;
  probed = probeOnce();
  return probed;
}

function probeOnce(): GlProbe {
  try {
    const canvas = document.createElement('canvas');
    // Chromium refuses this context when it would be software; ask again without it to name what there is.
    const fast = canvas.getContext('webgl2', { failIfMajorPerformanceCaveat: true });
    const gl = fast ?? document.createElement('canvas').getContext('webgl2');
    if (!gl) return { webgl2: false, why: 'this window has no WebGL2' };
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    const renderer = String(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER));
    // Give the context back: a page gets only so many, and the terminals need theirs.
    gl.getExtension('WEBGL_lose_context')?.loseContext();
    return { webgl2: true, renderer, software: !fast || isSoftwareGl(renderer) };
  } catch (e) {
    return { webgl2: false, why: `WebGL2 failed: ${(e as Error).message}` };
  }
}

export function chooseTermRenderer(pref: TermRendererPref, probe: GlProbe): TermRendererChoice {
  if (pref === 'dom') return { kind: 'dom', why: 'Settings say: draw terminals with the page (DOM)' };
  if (!probe.webgl2) return { kind: 'dom', why: `${probe.why}; drawing with the page (DOM)` };
  if (pref === 'webgl') {
    return {
      kind: 'webgl',
      why: `Settings say WebGL: ${probe.renderer}${probe.software ? ' (software, slower than the page renderer)' : ''}`,
    };
  }
  if (probe.software) return { kind: 'dom', why: `WebGL here is software (${probe.renderer}), slower than the page (DOM) renderer` };
  return { kind: 'webgl', why: `GPU: ${probe.renderer}` };
}

export interface RendererHandle {
  /** Stops drawing with WebGL, if it does (xterm goes back to its DOM renderer). */
  dispose(): void;
}

/**
 * Draws `term` (already opened) as `choice` says and reports what it ends up with: the WebGL addon
 * is loaded on demand; if it fails to load or start, or its context is lost later, the terminal
 * draws with the DOM renderer again and `report` says why.
 */
export function attachTermRenderer(term: Terminal, choice: TermRendererChoice, report: (c: TermRendererChoice) => void): RendererHandle {
  let disposed = false;
  let addon: { dispose(): void } | null = null;
  const fallBack = (why: string) => {
    try {
      addon?.dispose();
    } catch {
      // an addon that failed in activate may fail again here; xterm keeps its DOM renderer either way
    }
    addon = null;
    if (!disposed) report({ kind: 'dom', why: `${why}; drawing with the page (DOM)` });
  };
  if (choice.kind === 'dom') {
    report(choice);
  } else {
    import('@xterm/addon-webgl').then(
      ({ WebglAddon }) => {
        if (disposed) return;
        try {
          const a = new WebglAddon();
          addon = a;
          a.onContextLoss(() => fallBack('the GPU context was lost'));
          term.loadAddon(a);
          report(choice);
        } catch (e) {
          fallBack(`WebGL did not start (${(e as Error).message})`);
        }
      },
      (e: Error) => fallBack(`the WebGL renderer did not load (${e.message})`),
    );
  }
  return {
    dispose() {
      disposed = true;
      addon?.dispose();
      addon = null;
    },
  };
}
