import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { SearchAddon } from '@xterm/addon-search';
import { create } from 'zustand';
import type { Args } from '../../../shared/contract';
import type { HostKeyPrompt, SshData, SshStatus } from '../../../shared/contract/ssh';
import { TERM_SCROLLBACK } from '../../../shared/contract/values';
import { api } from '../api';
import { termOutput } from './term-output';
import {
  attachTermRenderer,
  chooseTermRenderer,
  onTermRendererPref,
  probeGl,
  termRendererPref,
  type RendererHandle,
  type TermRendererChoice,
  type TermRendererPref,
} from './term-renderer';

const sub = api.subscribe as (stream: string, key: string, fn: (data: unknown, bytes: number) => void) => () => void;
const ack = api.ack as (stream: string, key: string, bytes: number) => void;

/** An xterm instance that lives as long as its session, whatever page is showing. */
export interface TermEntry {
  term: Terminal;
  fit: FitAddon;
  search: SearchAddon;
  /** The element xterm renders into; moved into the page while visible, parked otherwise. */
  el: HTMLDivElement;
  /** What draws it (WebGL or DOM); replaced when the SE changes the choice in Settings. */
  drawing: RendererHandle;
  /** Records what draws it: on the element (data-renderer, data-renderer-why) and in the store. */
  reportDrawing: (c: TermRendererChoice) => void;
  release: () => void;
}

const entries = new Map<string, TermEntry>();
/**
 * Sessions that take no input (a VM's console log tail). Their xterm sends nothing: besides keys,
 * xterm answers queries found in the log (cursor position reports from the firmware), which would
 * otherwise come back as refusals printed over the log.
 */
const readOnly = new Set<string>();
let parking: HTMLDivElement | null = null;

/** Off-screen holder with a real size, so parked terminals keep measuring and rendering. */
export function park(el: HTMLElement) {
  if (!parking) {
    parking = document.createElement('div');
    parking.setAttribute('aria-hidden', 'true');
    parking.style.cssText = 'position:fixed;left:-10000px;top:0;width:800px;height:480px;overflow:hidden;';
    document.body.appendChild(parking);
  }
  parking.appendChild(el);
}

function decode(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

export function termFor(id: string): TermEntry | undefined {
  return entries.get(id);
}

function makeEntry(id: string, replay?: Uint8Array): TermEntry {
  const term = new Terminal({
    scrollback: TERM_SCROLLBACK,
    cursorBlink: true,
    convertEol: false,
    fontFamily: "ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace",
    fontSize: 13,
    allowProposedApi: true,
  });
  const fit = new FitAddon();
  const search = new SearchAddon();
  term.loadAddon(fit);
  term.loadAddon(search);
  const el = document.createElement('div');
  el.className = 'term-host';
  el.dataset.sessionId = id;
  park(el);
  term.open(el);
  const reportDrawing = (c: TermRendererChoice) => {
    el.dataset.renderer = c.kind;
    el.dataset.rendererWhy = c.why;
    useTerminals.setState((s) => ({ renderers: { ...s.renderers, [id]: c } }));
  };
  const drawing = attachTermRenderer(term, chooseTermRenderer(termRendererPref(), probeGl()), reportDrawing);
  // Copy with Ctrl+Shift+C (or Ctrl+C when text is selected), paste with Ctrl+Shift+V.
  term.attachCustomKeyEventHandler((e) => {
    if (e.type !== 'keydown') return true;
    const key = e.key.toLowerCase();
    if (e.ctrlKey && (e.shiftKey || term.hasSelection()) && key === 'c' && term.hasSelection()) {
      void navigator.clipboard?.writeText(term.getSelection());
      return false;
    }
    if (e.ctrlKey && e.shiftKey && key === 'v') {
      void navigator.clipboard?.readText().then((t) => term.paste(t));
      return false;
    }
    return true;
  });
  const typed = term.onData((data) => {
    if (readOnly.has(id)) return;
    api.call('ssh.input', { sessionId: id, data }).catch((e: Error) => term.write(`\r\n\x1b[31m[${e.message}]\x1b[0m\r\n`));
  });
  const resized = term.onResize(({ cols, rows }) => {
    api.call('ssh.resize', { sessionId: id, cols, rows }).catch(() => undefined);
  });
  // What the session printed before this window attached (after a reload), then the live stream.
  if (replay?.length) term.write(replay);
  // Flow control: acknowledge bytes only once xterm has parsed them (term-output.ts).
  const output = termOutput(term, (bytes) => ack('ssh.data', id, bytes));
  const stopData = sub('ssh.data', id, (raw) => output((raw as SshData).data));
  const stopStatus = sub('ssh.status', id, (raw) => useTerminals.getState().setStatus(raw as SshStatus));
  const entry: TermEntry = {
    term,
    fit,
    search,
    el,
    drawing,
    reportDrawing,
    release: () => {
      entry.drawing.dispose();
      stopData();
      stopStatus();
      typed.dispose();
      resized.dispose();
      term.dispose();
      el.remove();
    },
  };
  return entry;
}

// The SE changed the terminal renderer in Settings: every open terminal is redrawn by it at once.
onTermRendererPref((pref: TermRendererPref) => {
  const choice = chooseTermRenderer(pref, probeGl());
  for (const e of entries.values()) {
    e.drawing.dispose();
    e.drawing = attachTermRenderer(e.term, choice, e.reportDrawing);
  }
});

export interface Tab {
  sessionId: string;
  title: string;
  status: SshStatus | null;
  /** A read-only console (log tail): no typing, no "Type script". */
  readOnly?: boolean;
  /** A local VM's console: the VM it shows (a destroyed VM's tab offers no Reconnect). */
  vmId?: string;
  /** How the session signs in, said beside its state once open (a local VM: the vm-manager's key). */
  signedIn?: string;
}

interface TerminalsState {
  tabs: Tab[];
  active: string | null;
  prompts: HostKeyPrompt[];
  error: string | null;
  /** What draws each session's terminal, and why (issue 16: WebGL only on a real GPU). */
  renderers: Record<string, TermRendererChoice>;
  /** Opens a session and its tab; the xterm exists before the first byte arrives. */
  open(args: Args<'ssh.open'>, title: string): Promise<string>;
  /** Opens a local VM's serial console (interactive) or its read-only log tail as a tab. */
  openVmConsole(vmId: string, interactive: boolean, title: string): Promise<string>;
  /** Opens an SSH session as root into a local VM, signed in with the vm-manager's key for it. */
  openVmSsh(vm: { id: string; name: string }): Promise<string>;
  close(id: string): Promise<void>;
  reconnect(id: string): Promise<void>;
  select(id: string): void;
  setStatus(s: SshStatus): void;
  answer(prompt: HostKeyPrompt, accept: boolean, replace?: boolean): Promise<void>;
  /** Follows host-key prompts and picks up sessions already held by main (after a reload). */
  follow(): () => void;
}

let followers = 0;
let stopPrompts: (() => void) | null = null;

/** The xterm exists before the first byte arrives; the new tab becomes the active one. */
function addTab(sessionId: string, title: string, isReadOnly = false, extra: Pick<Tab, 'vmId' | 'signedIn'> = {}): string {
  if (isReadOnly) readOnly.add(sessionId);
  if (!entries.has(sessionId)) entries.set(sessionId, makeEntry(sessionId));
  useTerminals.setState((s) => ({
    tabs: s.tabs.some((t) => t.sessionId === sessionId)
      ? s.tabs
      : [...s.tabs, { sessionId, title, status: null, readOnly: isReadOnly, ...extra }],
    active: sessionId,
  }));
  // A console opens at once: its status may have been published before this window subscribed.
  api
    .call('ssh.sessions.list', {})
    .then((list) => {
      const st = list.find((x) => x.sessionId === sessionId);
      const tab = useTerminals.getState().tabs.find((t) => t.sessionId === sessionId);
      if (st && tab && tab.status === null) useTerminals.getState().setStatus(st);
    })
    .catch(() => undefined);
  return sessionId;
}

export const useTerminals = create<TerminalsState>((set) => ({
  tabs: [],
  active: null,
  prompts: [],
  error: null,
  renderers: {},
  async open(args, title) {
    set({ error: null });
    const { sessionId } = await api.call('ssh.open', args);
    return addTab(sessionId, title);
  },
  async openVmConsole(vmId, interactive, title) {
    set({ error: null });
    // The tab's xterm is fitted to the page later; this size is only the first guess.
    const { sessionId } = await api.call('ssh.openVmConsole', { vmId, interactive, cols: 100, rows: 30 });
    return addTab(sessionId, title, !interactive, { vmId });
  },
  async openVmSsh(vm) {
    set({ error: null });
    const { sessionId, title } = await api.call('ssh.openVmSsh', { vmId: vm.id, cols: 100, rows: 30 });
    return addTab(sessionId, title, false, { vmId: vm.id, signedIn: `signed in with the vm-manager's key for ${vm.name}` });
  },
  async close(id) {
    try {
      await api.call('ssh.close', { sessionId: id });
    } catch {
      /* already gone in main: drop the tab anyway */
    }
    entries.get(id)?.release();
    entries.delete(id);
    readOnly.delete(id);
    set((s) => {
      const tabs = s.tabs.filter((t) => t.sessionId !== id);
      const { [id]: _gone, ...renderers } = s.renderers;
      return { tabs, renderers, active: s.active === id ? (tabs.at(-1)?.sessionId ?? null) : s.active };
    });
  },
  async reconnect(id) {
    const e = entries.get(id);
    if (e) await api.call('ssh.resize', { sessionId: id, cols: e.term.cols, rows: e.term.rows }).catch(() => undefined);
    await api.call('ssh.reconnect', { sessionId: id });
  },
  select(id) {
    set({ active: id });
  },
  setStatus(st) {
    if (!st.interactive) readOnly.add(st.sessionId);
    set((s) => ({ tabs: s.tabs.map((t) => (t.sessionId === st.sessionId ? { ...t, status: st, title: t.title || st.title } : t)) }));
  },
  async answer(prompt, accept, replace) {
    await api.call('ssh.answerHostKey', { promptId: prompt.promptId, accept, ...(replace ? { replace: true } : {}) });
    set((s) => ({ prompts: s.prompts.filter((p) => p.promptId !== prompt.promptId) }));
  },
  follow() {
    if (followers++ === 0) {
      stopPrompts = sub('ssh.hostKeyPrompt', '*', (raw) => {
        const p = raw as HostKeyPrompt;
        set((s) => ({
          prompts:
            p.state === 'pending'
              ? [...s.prompts.filter((q) => q.promptId !== p.promptId), p]
              : s.prompts.filter((q) => q.promptId !== p.promptId),
        }));
      });
      api
        .call('ssh.hostKeyPrompts.list', {})
        .then((list) => set((s) => ({ prompts: [...s.prompts.filter((p) => !list.some((q) => q.promptId === p.promptId)), ...list] })))
        .catch(() => undefined);
      api
        .call('ssh.sessions.list', {})
        .then((list) => {
          for (const st of list) {
            if (entries.has(st.sessionId) || st.state === 'closed') continue;
            api
              .call('ssh.replay', { sessionId: st.sessionId })
              .then((r) => {
                if (entries.has(st.sessionId)) return;
                if (!st.interactive) readOnly.add(st.sessionId);
                entries.set(st.sessionId, makeEntry(st.sessionId, decode(r.data)));
                set((s) => ({
                  tabs: [...s.tabs, { sessionId: st.sessionId, title: st.title, status: st, readOnly: !st.interactive }],
                  active: s.active ?? st.sessionId,
                }));
              })
              .catch(() => undefined);
          }
        })
        .catch((e: Error) => set({ error: e.message }));
    }
    return () => {
      if (--followers === 0) {
        stopPrompts?.();
        stopPrompts = null;
      }
    };
  },
}));
