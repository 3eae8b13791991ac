import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { HostKeyDialog } from '../../../renderer/src/components/terminal/host-key-dialog';
import type { HostKeyPrompt } from '../../../shared/contract/ssh';

afterEach(cleanup);

const changed = (stored: HostKeyPrompt['stored']): HostKeyPrompt => ({
  promptId: 'p1',
  sessionId: 's1',
  host: 'jump.customer.example',
  port: 22,
  kind: 'changed',
  keyType: 'ssh-ed25519',
  fingerprint: 'SHA256:new',
  stored,
  state: 'pending',
});

describe('the changed-key dialog names where the other key is', () => {
  it("a key from OpenSSH's known_hosts: the file and line, and that the file is left alone", () => {
    render(
      <HostKeyDialog
        prompt={changed({
          keyType: 'ssh-ed25519',
          fingerprint: 'SHA256:old',
          addedAt: '2026-11-01T10:00:00Z',
          source: '/home/se/.ssh/known_hosts line 7',
        })}
      />,
    );
    expect(screen.getByTestId('hostkey-source').textContent).toBe(
      "In OpenSSH's /home/se/.ssh/known_hosts line 7 (ssh-ed25519; POV Desk keeps its own list and never changes that file)",
    );
    expect(screen.getByTestId('hostkey-stored').textContent).toBe('SHA256:old');
  });

  it("POV Desk's own stored key: since when", () => {
    render(<HostKeyDialog prompt={changed({ keyType: 'ssh-ed25519', fingerprint: 'SHA256:old', addedAt: '2026-11-01T10:00:00Z' })} />);
    expect(screen.queryByTestId('hostkey-source')).toBeNull();
    expect(screen.getByText(/^Stored \(ssh-ed25519, since /)).toBeTruthy();
  });
});
