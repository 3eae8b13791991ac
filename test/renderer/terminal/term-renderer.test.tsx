import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { Terminal } from '@xterm/xterm';
import { afterEach, describe, expect, it } from 'vitest';
import TerminalSettings from '../../../renderer/src/pages/settings/terminal-settings';
import {
  attachTermRenderer,
  chooseTermRenderer,
  isSoftwareGl,
  onTermRendererPref,
  probeGl,
  setTermRendererPref,
  termRendererPref,
  type TermRendererChoice,
  type TermRendererPref,
} from '../../../renderer/src/state/term-renderer';

/** What a few real machines report as UNMASKED_RENDERER_WEBGL (the first is this Chromium's with --disable-gpu). */
const SOFTWARE: [string, ...string[]] = [
  'ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)',
  'llvmpipe (LLVM 15.0.6, 256 bits)',
  'ANGLE (Mesa, llvmpipe (LLVM 19.1.7 256 bits), OpenGL 4.5)',
  'ANGLE (Microsoft, Microsoft Basic Render Driver Direct3D11 vs_5_0 ps_5_0, D3D11)',
  'Apple Software Renderer',
];
const HARDWARE: [string, ...string[]] = [
  'ANGLE (Intel, Mesa Intel(R) UHD Graphics 620 (KBL GT2), OpenGL 4.6)',
  'ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002503) Direct3D11 vs_5_0 ps_5_0, D3D11)',
  'ANGLE (Apple, ANGLE Metal Renderer: Apple M2, Unspecified Version)',
  'AMD Radeon Pro 5500M OpenGL Engine',
];

describe('terminal renderer: WebGL on a GPU, the DOM elsewhere', () => {
  afterEach(() => {
    cleanup();
    localStorage.clear();
  });

  it('tells software WebGL from a GPU by the renderer string', () => {
    for (const r of SOFTWARE) expect(isSoftwareGl(r), r).toBe(true);
    for (const r of HARDWARE) expect(isSoftwareGl(r), r).toBe(false);
  });

  it('chooses by the preference and what the window has', () => {
    const gpu = { webgl2: true as const, renderer: HARDWARE[0], software: false };
    const soft = { webgl2: true as const, renderer: SOFTWARE[0], software: true };
    const none = { webgl2: false as const, why: 'this window has no WebGL2' };
    expect(chooseTermRenderer('auto', gpu)).toEqual({ kind: 'webgl', why: `GPU: ${HARDWARE[0]}` });
    expect(chooseTermRenderer('auto', soft).kind).toBe('dom');
    expect(chooseTermRenderer('auto', soft).why).toContain('SwiftShader');
    expect(chooseTermRenderer('auto', none)).toEqual({ kind: 'dom', why: 'this window has no WebGL2; drawing with the page (DOM)' });
    expect(chooseTermRenderer('dom', gpu).kind).toBe('dom');
    expect(chooseTermRenderer('webgl', soft)).toEqual({
      kind: 'webgl',
      why: `Settings say WebGL: ${SOFTWARE[0]} (software, slower than the page renderer)`,
    });
    // Asked for WebGL where there is none: the DOM, and why.
    expect(chooseTermRenderer('webgl', none).kind).toBe('dom');
  });

  it('keeps the choice in this window, tells the terminals, and refuses an unknown one without changing it', () => {
    expect(termRendererPref()).toBe('auto');
    const heard: TermRendererPref[] = [];
    const stop = onTermRendererPref((p) => heard.push(p));
    setTermRendererPref('dom');
    expect(termRendererPref()).toBe('dom');
    expect(() => setTermRendererPref('vulkan' as TermRendererPref)).toThrow(/unknown terminal renderer "vulkan"/);
    expect(termRendererPref()).toBe('dom');
    stop();
    setTermRendererPref('webgl');
    expect(heard).toEqual(['dom']);
    localStorage.setItem('povdesk.terminalRenderer', '<script>');
    expect(termRendererPref()).toBe('auto');
  });

  it('falls back to the DOM, saying why, when the WebGL renderer cannot start', async () => {
    // happy-dom has no WebGL2: the addon loads (the same lazy import the app makes) and fails to start.
    expect(probeGl()).toEqual({ webgl2: false, why: 'this window has no WebGL2' });
    const el = document.createElement('div');
    document.body.appendChild(el);
    const term = new Terminal();
    term.open(el);
    const seen: TermRendererChoice[] = [];
    attachTermRenderer(term, { kind: 'webgl', why: 'test' }, (c) => seen.push(c));
    await waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]?.kind).toBe('dom');
    expect(seen[0]?.why).toMatch(/^WebGL did not start \(.+\); drawing with the page \(DOM\)$/);
    // A DOM choice is reported as it is, at once.
    const direct: TermRendererChoice[] = [];
    attachTermRenderer(term, { kind: 'dom', why: 'x' }, (c) => direct.push(c)).dispose();
    expect(direct).toEqual([{ kind: 'dom', why: 'x' }]);
    term.dispose();
    el.remove();
  });

  it('Settings → Terminals saves the choice and says what this window draws with', async () => {
    const heard: TermRendererPref[] = [];
    const stop = onTermRendererPref((p) => heard.push(p));
    render(<TerminalSettings />);
    expect(screen.getByTestId('term-renderer-now').textContent).toMatch(/In this window: the page \(DOM\) \(this window has no WebGL2/);
    fireEvent.change(screen.getByLabelText('Drawing'), { target: { value: 'webgl' } });
    expect(heard).toEqual(['webgl']);
    expect(termRendererPref()).toBe('webgl');
    expect((screen.getByLabelText('Drawing') as HTMLSelectElement).value).toBe('webgl');
    stop();
  });
});
