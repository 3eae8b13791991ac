import { useLayoutEffect, useRef, type DialogHTMLAttributes, type ReactNode } from 'react';

type Props = Omit<DialogHTMLAttributes<HTMLDialogElement>, 'open' | 'onCancel' | 'onClose'> & {
  /** Escape: the owner decides (close, refuse, discard) and unmounts the dialog when it closes. */
  onCancel(): void;
  /** The opener when the dialog opens on its own (a finished job, a prompt from main): focus goes back there. */
  returnTo?: () => HTMLElement | null;
  children: ReactNode;
};

/**
 * A modal on the platform's `<dialog>.showModal()`: the page behind is inert (Tab stays inside,
 * clicks do not reach it), Escape asks `onCancel`, and unmounting closes it, which gives focus back
 * to where it was (or to `returnTo`). Focus starts on the first focusable control, or on the one
 * marked autoFocus.
 */
export function ModalDialog({ onCancel, returnTo, children, ...rest }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const cancel = useRef(onCancel);
  cancel.current = onCancel;
  const back = useRef(returnTo);
  back.current = returnTo;
  // A layout effect: its clean-up runs before React removes the element, so close() can give focus back.
  useLayoutEffect(() => {
    const d = ref.current!;
    d.showModal();
    const onCancelEvent = (e: Event) => {
      e.preventDefault();
      cancel.current();
    };
    // Chromium may close without a cancelable cancel (Escape twice with no click between): while
    // the owner keeps the dialog (e.g. an answer is on its way), it stays open.
    const onClose = () => d.isConnected && !d.open && d.showModal();
    d.addEventListener('cancel', onCancelEvent);
    d.addEventListener('close', onClose);
    return () => {
      d.removeEventListener('cancel', onCancelEvent);
      d.removeEventListener('close', onClose);
      if (d.open) d.close();
      const to = back.current?.();
      if (to?.isConnected) to.focus();
    };
  }, []);
  return (
    <dialog ref={ref} {...rest}>
      {children}
    </dialog>
  );
}
