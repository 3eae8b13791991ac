import { useEffect, useRef } from 'react';

const FOCUSABLE = 'button:not(:disabled), [href], input:not(:disabled), select:not(:disabled), textarea:not(:disabled), [tabindex]:not([tabindex="-1"])';

function focusables(el: HTMLElement): HTMLElement[] {
  return [...el.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((e) => !e.closest('[hidden]'));
}

/**
 * A modal dialog's keyboard contract: focus moves into it when it opens (unless something inside
 * already took it), Tab and Shift+Tab wrap inside it, Escape closes it wherever focus is, and focus
 * returns to where it was when the dialog closes. Put the returned ref on the role="dialog" element.
 * `returnTo` names the opener when the dialog opens on its own (a finished job, a prompt from main),
 * so focus goes back to the control that asked for it rather than wherever it happened to be.
 */
export function useFocusTrap<T extends HTMLElement>(onEscape: () => void, opts: { returnTo?: () => HTMLElement | null } = {}) {
  const ref = useRef<T>(null);
  const escape = useRef(onEscape);
  escape.current = onEscape;
  const returnTo = useRef(opts.returnTo);
  returnTo.current = opts.returnTo;
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (!el.contains(document.activeElement)) (focusables(el)[0] ?? el).focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        escape.current();
        return;
      }
      if (e.key !== 'Tab') return;
      const f = focusables(el);
      if (!f.length) return e.preventDefault();
      const first = f[0]!;
      const last = f[f.length - 1]!;
      const inside = el.contains(document.activeElement);
      if (e.shiftKey && (document.activeElement === first || !inside)) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && (document.activeElement === last || !inside)) {
        e.preventDefault();
        first.focus();
      }
    };
    document.addEventListener('keydown', onKey, true);
    return () => {
      document.removeEventListener('keydown', onKey, true);
      const back = returnTo.current?.() ?? before;
      if (back?.isConnected) back.focus();
    };
  }, []);
  return ref;
}
