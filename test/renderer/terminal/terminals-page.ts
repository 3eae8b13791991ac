/**
 * What the Terminals page suites share: a transport that answers the page's own reads (VM images,
 * SSH sessions, host-key prompts, profiles, known hosts: all empty) and hands every other method to
 * the test, and the reset after each test.
 */
import { cleanup } from '@testing-library/react';
import { afterEach } from 'vitest';
import { setTransport } from '../../../renderer/src/api';
import { useTerminals } from '../../../renderer/src/state/terminals';
import { useVms } from '../../../renderer/src/state/vms';

const EMPTY_LISTS = new Set(['ssh.sessions.list', 'ssh.hostKeyPrompts.list', 'ssh.profiles.list', 'ssh.knownHosts.list']);

/**
 * Installs the transport: `answer` replies to the methods the test is about and returns undefined
 * for the rest, which the page's own reads answer; any other method fails the test.
 */
export function terminalsTransport(answer: (method: string, args: unknown) => unknown): void {
  setTransport({
    transport: 'ws',
    call: async (method, args) => {
      const reply = await answer(method, args);
      if (reply !== undefined) return reply;
      if (method === 'vm.images') return { images: [] };
      if (EMPTY_LISTS.has(method)) return [];
      throw new Error(`not in this test: ${method}`);
    },
    subscribe: () => () => {},
    ack: () => {},
  });
}

/** After each test of the file: unmounted, no transport, no terminal tabs, no VM list read. */
export function resetTerminalsAfterEach(): void {
  afterEach(() => {
    cleanup();
    setTransport(null);
    useTerminals.setState({ tabs: [], active: null });
    useVms.setState({ vms: null });
  });
}
