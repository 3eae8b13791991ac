// The POV list's time to first render with 2,000 rows against 20 rows (target ratio ≤ 1.5): the
// list is virtualised, so the DOM holds a viewport's worth of rows whatever the count. Rendered
// with React into a happy-dom document (no layout engine, so the list uses its fixed fallback
// viewport, the same number of rows a 640 px window shows). Both sizes are measured in the same
// run, interleaved, medians of many renders after a warm-up. For contrast it also times a plain
// (non-virtualised) table of the same rows, which is what the ratio target exists to prevent.
import { Window } from 'happy-dom';

const win = new Window({ width: 1280, height: 800, url: 'http://localhost/' });
const g = globalThis as Record<string, unknown>;
for (const k of [
  'window',
  'document',
  'navigator',
  'HTMLElement',
  'Element',
  'Node',
  'ResizeObserver',
  'getComputedStyle',
  'requestAnimationFrame',
  'cancelAnimationFrame',
  'MutationObserver',
  'Event',
]) {
  if (k === 'window') g.window = win;
  else if (k === 'navigator') Object.defineProperty(globalThis, 'navigator', { value: win.navigator, configurable: true });
  else g[k] = (win as unknown as Record<string, unknown>)[k];
}
g.IS_REACT_ACT_ENVIRONMENT = false;

const React = await import('react');
const { createRoot } = await import('react-dom/client');
const { flushSync } = await import('react-dom');
const { PovList } = await import('../../renderer/src/components/pov/pov-list');
const { povActionsFor } = await import('../../shared/contract/pov');
type PovView = import('../../shared/contract/pov').PovView;

const NOW = Date.now();
function rows(n: number): PovView[] {
  return Array.from({ length: n }, (_, i) => {
    const runstate = i % 3 === 0 ? 'suspended' : 'running';
    return {
      id: `p${i}`,
      name: `POV ${i}`,
      platform: 'skytap',
      templateId: '500',
      templateName: `Template ${i % 7}`,
      envId: String(1000 + i),
      state: 'active' as const,
      runstate,
      rateLimited: i % 50 === 1,
      errorMessage: null,
      lastConfirmedAt: new Date(NOW - (i % 600) * 1000).toISOString(),
      envGoneAt: null,
      controlNode: { name: null, vmId: null, status: i % 4 === 0 ? 'installed' : null, reason: null, mode: null },
      createdAt: new Date(NOW - i * 1000).toISOString(),
      updatedAt: new Date(NOW).toISOString(),
      activeJobId: null,
      actions: povActionsFor({ state: 'active', runstate, envId: String(1000 + i), busy: false }),
    };
  });
}

function PlainTable({ povs }: { povs: PovView[] }) {
  const h = React.createElement;
  return h(
    'table',
    null,
    h(
      'tbody',
      null,
      povs.map((p) =>
        h(
          'tr',
          { key: p.id },
          h('td', null, p.name),
          h('td', null, p.templateName),
          h('td', null, p.runstate),
          h('td', null, p.controlNode.status ?? '—'),
          h(
            'td',
            null,
            h('button', { disabled: !p.actions.start }, 'Start'),
            h('button', { disabled: !p.actions.suspend }, 'Suspend'),
            h('button', null, 'Destroy'),
          ),
        ),
      ),
    ),
  );
}

/** Time from render() to the rows being in the document (flushSync commits synchronously). */
function firstRender(el: React.ReactElement): { ms: number; domRows: number } {
  const host = win.document.createElement('div');
  win.document.body.appendChild(host as never);
  const root = createRoot(host as unknown as HTMLElement);
  const t0 = performance.now();
  flushSync(() => root.render(el));
  const ms = performance.now() - t0;
  const domRows = host.querySelectorAll('[role="row"], tr').length;
  root.unmount();
  host.remove();
  return { ms, domRows };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const small = rows(20);
const large = rows(2000);
const noop = () => {};
const list = (povs: PovView[]) => React.createElement(PovList, { povs, jobs: {}, now: NOW, onOpen: noop, onAction: noop });

for (let i = 0; i < 15; i++) {
  firstRender(list(small));
  firstRender(list(large));
}
const RUNS = 41;
const t20: number[] = [];
const t2000: number[] = [];
let dom20 = 0;
let dom2000 = 0;
for (let i = 0; i < RUNS; i++) {
  const a = firstRender(list(small));
  const b = firstRender(list(large));
  t20.push(a.ms);
  t2000.push(b.ms);
  dom20 = a.domRows;
  dom2000 = b.domRows;
}
if (dom20 === 0 || dom2000 === 0) {
  // React logs a render error and commits nothing: the times would measure an empty list
  console.error(
    'pov-list: PovList rendered no rows, so there is nothing to time (run it through scripts/bench.mjs, which gives tsx the JSX options)',
  );
  process.exit(1);
}
const ratio = median(t2000) / median(t20);
console.log(`bench pov-list first render 20 rows: ${median(t20).toFixed(2)} ms (${dom20} rows in DOM)`);
console.log(`bench pov-list first render 2000 rows: ${median(t2000).toFixed(2)} ms (${dom2000} rows in DOM)`);
console.log(`bench pov-list 2000 vs 20 rows: ${ratio.toFixed(2)} x ratio ${ratio.toFixed(2)} target 1.5`);

// contrast: what a plain table costs (informational, no target)
const p20: number[] = [];
const p2000: number[] = [];
for (let i = 0; i < 7; i++) {
  p20.push(firstRender(React.createElement(PlainTable, { povs: small })).ms);
  p2000.push(firstRender(React.createElement(PlainTable, { povs: large })).ms);
}
console.log(`bench pov-list non-virtualised table 2000 vs 20 rows (contrast): ${(median(p2000) / median(p20)).toFixed(1)} x`);
await win.happyDOM.close();
if (ratio > 1.5) {
  console.error(`pov-list: 2,000 rows took ${ratio.toFixed(2)}x as long as 20 (target ≤ 1.5)`);
  process.exit(1);
}
