import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { needs } from '../support/system';
import { Consumer, nextPrompt, run, waitFor, waitState } from './harness';
import { loopbackSshd } from './sessions-setup';
import { FreezableRelay } from './sshd';

/* An open session over a real sshd: resize, how it ends, reconnecting (dropped, asked, asleep), typing a script. */

const skip = needs(['/usr/sbin/sshd', 'ssh-keygen']);

describe.skipIf(skip)('ssh sessions against a real sshd on loopback: an open session', () => {
  const t = loopbackSshd();

  it('a resize reaches the server (stty size)', async () => {
    const e = t.env();
    const c = await t.openAccepted(e, t.keyTarget(), { cols: 80, rows: 24 });
    await run(e, c, 'stty size; echo sz-$((1+1))', /24 80\r?\n(?:.*\n)?sz-2/);
    e.manager.resize(c.sessionId, 132, 43);
    await run(e, c, 'stty size; echo sz2-$((1+1))', /43 132\r?\n(?:.*\n)?sz2-2/);
  });

  it('tells closed by you, shell exited and a dropped connection apart; reconnects after sshd restarts and re-sends the size', async () => {
    const e = t.env();
    const c = await t.openAccepted(e, t.keyTarget({ autoReconnect: true }));
    e.manager.resize(c.sessionId, 100, 30);
    await t.sshd.restart();
    const dropped = await waitFor('a dropped status', () =>
      e.statuses.items.find((s) => s.sessionId === c.sessionId && s.closedBy === 'dropped'),
    );
    expect(dropped.state).toBe('reconnecting');
    const back = await waitFor('reopened', () =>
      e.statuses.items.find((s) => s.sessionId === c.sessionId && s.state === 'open' && s.attempt > 0),
    );
    expect(back.reason).toMatch(/reconnected/);
    await run(e, c, 'stty size; echo rs-$((1+1))', /30 100\r?\n(?:.*\n)?rs-2/);

    e.manager.input(c.sessionId, 'exit 3\n');
    const ex = await waitState(e, c.sessionId, 'closed');
    expect(ex.closedBy).toBe('exited');
    expect(ex.reason).toMatch(/code 3/);

    const id2 = await e.manager.open({ target: t.keyTarget({ autoReconnect: true }), cols: 80, rows: 24 });
    await waitState(e, id2, 'open');
    const c2 = new Consumer(e.hub, id2);
    e.manager.close(c2.sessionId);
    const mine = e.statuses.items.filter((s) => s.sessionId === c2.sessionId).at(-1)!;
    expect(mine).toMatchObject({ state: 'closed', closedBy: 'user', reason: 'closed by you' });
  });

  it('the Reconnect action replaces a live connection without the old one tearing down the new', async () => {
    const e = t.env();
    const c = await t.openAccepted(e);
    e.manager.resize(c.sessionId, 91, 27);
    const from = e.statuses.items.length;
    await e.manager.reconnect(c.sessionId);
    await waitState(e, c.sessionId, 'open');
    await new Promise((r) => setTimeout(r, 500));
    expect(e.manager.get(c.sessionId).state.state).toBe('open');
    // One clean pass: no failed attempt and no retry in between.
    const after = e.statuses.items.slice(from).filter((s) => s.sessionId === c.sessionId);
    expect(after.filter((s) => s.closedBy !== null || s.nextRetryMs !== null)).toEqual([]);
    await run(e, c, 'stty size; echo rc-$((1+2))', /27 91\r?\n(?:.*\n)?rc-3/);
  });

  it('keepalive notices a connection gone silent (laptop asleep) and the session reconnects once the network is back', async () => {
    const relay = new FreezableRelay(t.sshd.port);
    await relay.start();
    try {
      const e = t.env();
      const id = await e.manager.open({
        target: t.keyTarget({ port: relay.port, keepaliveSec: 1, autoReconnect: true }),
        cols: 80,
        rows: 24,
      });
      const c = new Consumer(e.hub, id);
      e.manager.answerHostKey((await nextPrompt(e, id)).promptId, true);
      await waitState(e, id, 'open');
      relay.freeze();
      const dropped = await waitFor(
        'keepalive to give up',
        () => e.statuses.items.find((s) => s.sessionId === id && s.closedBy === 'dropped'),
        10_000,
      );
      expect(dropped.reason).toMatch(/keepalive/);
      relay.thaw();
      e.manager.wake();
      await waitFor('reopened', () => e.statuses.items.find((s) => s.sessionId === id && s.state === 'open' && s.attempt > 0));
      await run(e, c, 'echo awake-$((2*2))', /awake-4/);
    } finally {
      relay.close();
    }
  });

  it('types a script into a real shell line by line and reports the sha256 match', async () => {
    const e = t.env();
    const c = await t.openAccepted(e);
    const script =
      [
        '#!/bin/sh',
        'echo "hello $USER" > /dev/null',
        "printf '%s\\n' 'quotes \" and $dollars stay'",
        ...Array.from({ length: 40 }, (_, i) => `# line ${i} ${'x'.repeat(i * 5)}`),
      ].join('\n') + '\n';
    const path = join(t.sshd.scratch, 'typed.sh');
    const r = await e.manager.typeInto(c.sessionId, script, { path });
    expect(r.match).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe(script);
    expect(r.lines).toBe(43);
    // The same file hashed by the system tool agrees.
    expect(execFileSync('sha256sum', [path], { encoding: 'utf8' }).split(' ')[0]).toBe(r.expected);
    writeFileSync(path, '');
  });
});
