import { afterEach, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import { testCore } from '../foundation/helpers';

// Item 10 of the security review: environment overrides apply to this process only and are
// never written to SQLite; an empty variable overrides nothing.
describe('environment overrides', () => {
  let core: Core;
  afterEach(async () => core?.close());
  const call = (m: string, a: unknown) => core.dispatcher.call(m as never, a as never, { transport: 'ws' });
  const rows = () => core.base.db.prepare('SELECT key, value FROM settings ORDER BY key').all() as { key: string; value: string }[];

  it('saving Settings as the page does (the view sent back) stores none of the SKYTAP_* overrides', async () => {
    core = await testCore({ SKYTAP_URL: 'https://env.skytap.example', SKYTAP_USERNAME: 'env-user', SKYTAP_PROJECT_ID: '777' });
    core.base.settings.setValue('skytap.url', 'https://stored.skytap.example');
    core.base.settings.setValue('skytap.username', 'stored-user');
    core.base.settings.setValue('skytap.projectId', '123');
    const view = (await call('settings.get', {})) as { skytap: { username: string; url: string; projectId: string; fromEnv: string[] } };
    expect(view.skytap).toMatchObject({ username: 'env-user', url: 'https://env.skytap.example', projectId: '777' });
    await call('settings.saveSkytap', { username: view.skytap.username, url: view.skytap.url, projectId: view.skytap.projectId });
    const text = JSON.stringify(rows());
    expect(text).not.toContain('env.skytap.example');
    expect(text).not.toContain('env-user');
    expect(text).not.toContain('777');
    expect(core.base.settings.getValue('skytap.url')).toBe('https://stored.skytap.example');
    expect(core.base.settings.getValue('skytap.username')).toBe('stored-user');
    expect(core.base.settings.getValue('skytap.projectId')).toBe('123');
  });

  it('a field with no override is still saved beside overridden ones', async () => {
    core = await testCore({ SKYTAP_URL: 'https://env.skytap.example' });
    await call('settings.saveSkytap', { username: 'me', url: 'https://env.skytap.example', projectId: '42' });
    expect(core.base.settings.getValue('skytap.username')).toBe('me');
    expect(core.base.settings.getValue('skytap.projectId')).toBe('42');
    expect(core.base.settings.getValue('skytap.url')).toBeNull();
  });

  it('an empty SKYTAP_PROJECT_ID overrides nothing', async () => {
    core = await testCore({ SKYTAP_PROJECT_ID: '' });
    core.base.settings.setValue('skytap.projectId', '123');
    expect((await core.base.settings.skytap()).projectId).toBe('123');
    const view = (await call('settings.get', {})) as { skytap: { projectId: string; fromEnv: string[] } };
    expect(view.skytap.projectId).toBe('123');
    expect(view.skytap.fromEnv).toEqual([]);
  });

  it('saving control-node settings never stores POVDESK_CONTROL_PLANE_URL', async () => {
    core = await testCore({ POVDESK_CONTROL_PLANE_URL: 'https://env-cp.example' });
    core.base.settings.setValue('controlNode.controlPlaneUrl', 'https://stored-cp.example');
    const view = (await call('controlNode.getSettings', {})) as { controlPlaneUrl: string };
    expect(view.controlPlaneUrl).toBe('https://env-cp.example');
    await call('controlNode.saveSettings', { controlPlaneUrl: view.controlPlaneUrl, agentImage: 'reg.example/agent:1' });
    expect(JSON.stringify(rows())).not.toContain('env-cp.example');
    expect(core.base.settings.getValue('controlNode.controlPlaneUrl')).toBe('https://stored-cp.example');
    expect(core.base.settings.getValue('controlNode.agentImage')).toBe('reg.example/agent:1');
  });
});
