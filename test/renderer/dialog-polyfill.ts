/**
 * happy-dom's <dialog>.showModal() only sets `open`: here it also does what Chromium does that the
 * renderer relies on (ModalDialog, renderer/src/components/modal-dialog.tsx): focus moves to the
 * first focusable control inside, Escape fires a cancelable `cancel` and closes unless it is
 * prevented, and close() gives focus back to where it was. The inert page behind (Tab staying
 * inside) is the browser's alone: the browser-mode e2e checks it in Chromium.
 */
const FOCUSABLE =
  'button:not(:disabled), [href], input:not(:disabled), select:not(:disabled), textarea:not(:disabled), [tabindex]:not([tabindex="-1"])';
const before = new WeakMap<HTMLDialogElement, Element | null>();
const proto = HTMLDialogElement.prototype;
const nativeClose = proto.close;

proto.showModal = function showModal(this: HTMLDialogElement) {
  before.set(this, document.activeElement);
  this.setAttribute('open', '');
  (this.querySelector<HTMLElement>('[autofocus]') ?? this.querySelector<HTMLElement>(FOCUSABLE) ?? this).focus();
};

proto.close = function close(this: HTMLDialogElement, returnValue?: string) {
  const wasOpen = this.open;
  nativeClose.call(this, returnValue);
  const back = before.get(this);
  if (wasOpen && back instanceof HTMLElement && back.isConnected) back.focus();
};

document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || e.defaultPrevented) return;
  const open = [...document.querySelectorAll('dialog[open]')].at(-1) as HTMLDialogElement | undefined;
  if (!open) return;
  if (open.dispatchEvent(new Event('cancel', { cancelable: true }))) open.close();
});
