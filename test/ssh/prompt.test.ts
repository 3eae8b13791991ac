import { describe, expect, it } from 'vitest';
import { PROMPT } from './harness';

/** openShell's prompt check, against what shells printed in real runs. */
describe('the test harness sees a shell prompt', () => {
  it.each([
    ['busybox, cursor query', '\r\n~ # \x1b[6n'],
    // a CI run (2026-12-02) waited 15 s on this: the prompt redrawn after the window size arrived
    [
      'busybox, redrawn',
      '\r\n\r\nBusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) built-in shell (ash)\r\n' +
        "Enter 'help' for a list of built-in commands.\r\n\r\n~ # \x1b[6n\r~ # \x1b[J",
    ],
    ['dash', '$ '],
  ])('%s', (_name, out) => expect(PROMPT.test(out)).toBe(true));

  it.each([
    ['a command still printing', '~ # echo hi\r\nhi'],
    ['a prompt followed by text', '~ # ls\r\n'],
  ])('not: %s', (_name, out) => expect(PROMPT.test(out)).toBe(false));
});
