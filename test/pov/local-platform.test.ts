/**
 * The Local platform's own rules: the environment's runstate from its VMs, the guest→host forward
 * an agent URL at GUEST_HOST_ALIAS asks for (and its refusal), and a vm-manager without POV Desk's
 * user-data route (giantswarm's own) named as such; and the Skytap platform over the emulator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { hostForwardsFor, LocalPlatform, localRunstate, type LocalVmApi } from '../../main/services/lab-platforms/local';
import { VmApiError } from '../../main/vm-api/client';
import { GUEST_HOST_ALIAS } from '../../main/vm-api/povdesk';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { SkytapPlatform } from '../../main/services/lab-platforms/skytap';
import { getPov } from '../../main/services/pov/repo';
import { PLATFORM_WORDS } from '../../main/services/lab-platforms/words';
import { clientFor, createPov, world, type World } from './helpers';
import { fakeManager, fakeManagerSkip, templatesOf, type FakeManager } from './local-support';

describe('localRunstate', () => {
  it(
    'reads a failed VM first, then create/stop/delete in progress as busy, all powered on (booting included) as running, all ' +
      'stopped as stopped, else mixed',
    () => {
      expect(localRunstate(['ready', 'running'])).toBe('running');
      expect(localRunstate(['stopped', 'stopped'])).toBe('stopped');
      expect(localRunstate(['ready', 'booting'])).toBe('running');
      expect(localRunstate(['attesting', 'creating'])).toBe('busy');
      expect(localRunstate(['attesting', 'failed'])).toBe('failed');
      expect(localRunstate(['ready', 'stopped'])).toBe('mixed');
    },
  );
});

describe("the lifecycle's create line", () => {
  it("is the platform's own: Skytap's request for Skytap, no Skytap words for the local vm-manager", () => {
    expect(PLATFORM_WORDS.skytap.createRequest('500')).toBe('POST /configurations from template 500');
    expect(PLATFORM_WORDS.local.createRequest('two-vms')).toBe('creating the VMs of local template two-vms');
  });
});

describe('hostForwardsFor', () => {
  it("forwards the agent URL's port at GUEST_HOST_ALIAS to the loopback control plane's port; nothing for any other agent URL", () => {
    expect(hostForwardsFor({ agentUrl: `http://${GUEST_HOST_ALIAS}:8080`, controlPlaneUrl: 'http://127.0.0.1:41234' })).toEqual([
      { guest_port: 8080, host_port: 41234 },
    ]);
    expect(hostForwardsFor({ agentUrl: `https://${GUEST_HOST_ALIAS}`, controlPlaneUrl: 'http://localhost:9000' })).toEqual([
      { guest_port: 443, host_port: 9000 },
    ]);
    expect(hostForwardsFor({ agentUrl: 'https://cp.example.com', controlPlaneUrl: 'https://cp.example.com' })).toEqual([]);
    expect(hostForwardsFor({ agentUrl: '', controlPlaneUrl: 'http://127.0.0.1:1' })).toEqual([]);
  });

  it("refuses a forward to a control plane that is not on this host's loopback", () => {
    expect(() => hostForwardsFor({ agentUrl: `http://${GUEST_HOST_ALIAS}:8080`, controlPlaneUrl: 'https://cp.example.com' })).toThrow(
      /must be on this host's loopback .* not https:\/\/cp\.example\.com; fix Settings → Control node/,
    );
  });
});

describe('LocalPlatform.power', () => {
  it('suspend stops every powered-on VM, a booting or attesting one included (it reads running), and leaves a stopped one', async () => {
    const states = { a1: 'booting', a2: 'attesting', a3: 'ready', a4: 'running', a5: 'stopped' } as const;
    const stopped: string[] = [];
    const vms = Object.entries(states).map(([id, state]) => ({ id, name: `povdesk-00000000-${id}`, state }));
    const api = {
      list: async () => vms,
      stop: async (id: string) => {
        stopped.push(id);
      },
    } as unknown as LocalVmApi;
    await new LocalPlatform({ api: async () => api, templates: templatesOf() }).power('povdesk-00000000', 'suspended');
    expect(stopped).toEqual(['a1', 'a2', 'a3', 'a4']);
  });
});

describe.skipIf(fakeManagerSkip)('user_data on a vm-manager without the user-data route', () => {
  let m: FakeManager | undefined;
  afterEach(async () => {
    await m?.close();
    m = undefined;
  });

  it('a client without setUserData, and a route answering 404 for a VM that exists, are both "user_data only at create"', async () => {
    m = await fakeManager();
    const real = m.client;
    const vm = await real.create({
      name: 'povdesk-00000000-a',
      image: TEST_IMAGE,
      cpus: 1,
      memory_mib: 256,
      disk_gib: 1,
      wait_for: 'none',
    });
    const noRoute: LocalVmApi = {
      list: () => real.list(),
      get: (id) => real.get(id),
      networks: () => real.networks(),
      createNetwork: (b) => real.createNetwork(b),
      deleteNetwork: (n) => real.deleteNetwork(n),
      create: (b) => real.create(b),
      start: (id) => real.start(id),
      stop: (id) => real.stop(id),
      delete: (id) => real.delete(id),
    };
    const why = /this vm-manager takes user_data only at create/;
    await expect(
      new LocalPlatform({ api: async () => noRoute, templates: templatesOf() }).setUserData('povdesk-00000000', vm.id, 'x'),
    ).rejects.toMatchObject({ code: 'unsupported', message: why });
    const answers404: LocalVmApi = {
      ...noRoute,
      setUserData: async () => {
        throw new VmApiError('not_found', 'no such route', 404);
      },
    };
    const p = new LocalPlatform({ api: async () => answers404, templates: templatesOf() });
    await expect(p.setUserData('povdesk-00000000', vm.id, 'x')).rejects.toMatchObject({ code: 'unsupported', message: why });
    // a VM that does not exist stays not_found
    await expect(p.setUserData('povdesk-00000000', 'abcdef12', 'x')).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('SkytapPlatform: the same interface over the Skytap client (emulator)', () => {
  let w: World | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it("finds a POV's environment by its tag, reads it with its VMs, writes/clears user_data, names no environment in advance", async () => {
    w = await world();
    const { povId, job } = await createPov(w);
    expect(job.state).toBe('succeeded');
    const envId = getPov(w.db, povId)!.env_id!;
    const p = new SkytapPlatform(clientFor(w.emu.url));
    expect(p.envIdFor()).toBeNull();
    expect(await p.findByTag(povId.slice(0, 8))).toEqual([{ id: envId, name: getPov(w.db, povId)!.env_name }]);
    expect(await p.findByTag('00000000')).toEqual([]);
    const env = (await p.get(envId))!;
    expect(env.runstate).toBe('running');
    expect(env.vms.length).toBeGreaterThan(0);
    const vm = env.vms[0]!;
    await p.setUserData(envId, vm.id, 'hello');
    expect(await clientFor(w.emu.url).getVmUserData(envId, vm.id)).toBe('hello');
    await p.setUserData(envId, vm.id, null);
    expect(await clientFor(w.emu.url).getVmUserData(envId, vm.id)).toBe('');
  });
});
