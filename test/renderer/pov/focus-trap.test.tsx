import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { useFocusTrap } from '../../../renderer/src/components/focus-trap';

afterEach(cleanup);

function Dialog({ onClose }: { onClose(): void }) {
  const ref = useFocusTrap<HTMLDivElement>(onClose);
  return (
    <div role="dialog" aria-modal="true" aria-label="D" ref={ref} tabIndex={-1}>
      <button>first</button>
      <button disabled>off</button>
      <button>last</button>
    </div>
  );
}

function Page() {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button onClick={() => setOpen(true)}>open</button>
      {open && <Dialog onClose={() => setOpen(false)} />}
    </>
  );
}

describe('dialog focus trap', () => {
  it('takes focus, wraps Tab inside, closes on Escape from anywhere and gives focus back', () => {
    render(<Page />);
    const opener = screen.getByRole('button', { name: 'open' });
    opener.focus();
    fireEvent.click(opener);
    expect(document.activeElement?.textContent).toBe('first');
    fireEvent.keyDown(document.activeElement!, { key: 'Tab', shiftKey: true });
    expect(document.activeElement?.textContent).toBe('last');
    fireEvent.keyDown(document.activeElement!, { key: 'Tab' });
    expect(document.activeElement?.textContent).toBe('first');
    // focus wandered out (a click on the backdrop): Escape still closes
    (document.activeElement as HTMLElement).blur();
    fireEvent.keyDown(document.body, { key: 'Escape' });
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(document.activeElement).toBe(opener);
  });
});
