import type { Services } from '../../main/core/base';
import type { Logger } from '../../main/services/log/logger';
import type { SecretStore } from '../../main/services/secrets/store';
import type { Db } from '../../main/services/store/db';
import { startEmulator, type Emulator } from '../skytap-emulator/emulator';
import { SEEDS } from '../skytap-emulator/seed';
import { FAST_TIMING } from '../pov/helpers';
import { testCore, type TestCore } from '../support/core';

export type ShareWorld = Pick<Services, 'shares' | 'autoDelete' | 'notify' | 'ladder'>;

/**
 * A world for share links and auto-delete: the real core (every migration, a real log file, its
 * Dispatcher), the Skytap emulator over HTTP, and ONE controllable clock that both the core's
 * services and the emulator read (real time plus an offset, so the emulator's busy phases still
 * pass while a test jumps days ahead).
 */
export interface ShareTestWorld {
  dir: string;
  emu: Emulator;
  clock: { offsetMs: number; now(): Date; advance(ms: number): void };
  base: TestCore['base'];
  db: Db;
  log: Logger;
  share: ShareWorld;
  call: TestCore['call'];
  /** Closes the core and builds a new one over the same home (an app restart). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export const HOUR = 3600_000;
export const DAY = 24 * HOUR;

export async function shareWorld(opts: { secrets?: SecretStore } = {}): Promise<ShareTestWorld> {
  const clock = {
    offsetMs: 0,
    now: () => new Date(Date.now() + clock.offsetMs),
    advance: (ms: number) => {
      clock.offsetMs += ms;
    },
  };
  const emu = await startEmulator({ timing: FAST_TIMING, seed: SEEDS.demo, now: () => Date.now() + clock.offsetMs });
  const t = await testCore({
    env: { POVDESK_SKYTAP_POLL_MS: '20' },
    logName: 'share-test',
    tuning: { now: clock.now },
    ...(opts.secrets ? { secrets: opts.secrets } : {}),
  });
  await t.base.settings.saveSkytap({ username: 'demo', apiToken: 'demo-token', url: emu.url });
  return {
    dir: t.home,
    emu,
    clock,
    get base() {
      return t.base;
    },
    get db() {
      return t.db;
    },
    get log() {
      return t.base.log;
    },
    get share() {
      const { shares, autoDelete, notify, ladder } = t.services;
      return { shares, autoDelete, notify, ladder };
    },
    call: (method, args) => t.call(method, args),
    restart: () => t.restart(),
    async close() {
      await t.close();
      await emu.close();
    },
  };
}

/** Creates a POV through pov.create and waits for its job to succeed. */
export async function createPov(w: ShareTestWorld, autoDeleteAt?: Date, name = 'Acme POV'): Promise<string> {
  const templateId = [...w.emu.state.templates.keys()][0]!;
  const { jobId } = await w.call('pov.create', { templateId, name, ...(autoDeleteAt ? { autoDeleteAt: autoDeleteAt.toISOString() } : {}) });
  const job = await w.base.jobs.wait(jobId);
  if (job.state !== 'succeeded') throw new Error(`pov.create failed: ${JSON.stringify(job.error)}`);
  return job.subject!;
}

/** A request straight to the emulator, as another Skytap client (the web UI, a script) would send it. */
export function skytapRequest(w: ShareTestWorld, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
  return fetch(`${w.emu.url}${path}`, {
    method,
    headers: {
      authorization: 'Basic ' + Buffer.from('demo:demo-token').toString('base64'),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** POSTs a sharing portal for the first VM of the world's only environment, outside the app. */
export function postPortal(w: ShareTestWorld, access: string, name = 'made in Skytap'): Promise<Response> {
  const envId = w.emu.state.environmentIds()[0]!;
  const vm = w.emu.state.environments.get(envId)!.vms[0]!;
  return skytapRequest(w, 'POST', `/v2/configurations/${envId}/publish_sets.json`, {
    name,
    vms: [{ vm_ref: `${w.emu.url}/vms/${vm.id}`, access }],
  });
}
