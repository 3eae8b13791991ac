import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Core } from '../../main/core/create';
import { TEST_TEMPLATE_ID } from '../../main/services/lab-platforms/local-lab-templates';
import { createApiHandler } from '../../main/vm-manager/api';
import { hostReport } from '../../main/vm-manager/host';
import { TEST_IMAGE } from '../../main/vm-manager/images';
import { Networks } from '../../main/vm-manager/networks';
import { VmService } from '../../main/vm-manager/vms';
import { setTransport } from '../../renderer/src/api';
import { LocalTemplatesPanel } from '../../renderer/src/components/templates/local-templates';
import { testCore } from '../foundation/helpers';
import { needs } from '../support/system';
import { attachLocalManager } from '../vm/helpers';
import { FakeLauncher } from '../vm-manager/fake-launcher';
import { coreTransport } from './core-transport';

/**
 * The Templates page's "Local templates" against a real core whose vm-manager is the real daemon's
 * REST handler (fake launcher: no VM boots here) with two images: the list shows the bundled test
 * template first, "New local template" saves a two-VM template from the manager's images, the
 * core's refusal shows in the form, a template whose image was deleted since says so, and Delete
 * removes the file.
 */
const skip = needs(['qemu-system-x86_64', 'swtpm', 'dropbearkey', 'ssh-keygen']);
const TOKEN = 'renderer-labtpl-token-0123456789';

describe.skipIf(skip)('Templates page: Local templates', () => {
  let core: Core;
  let state: string;
  let server: Server;
  let vms: VmService;
  const files = () => {
    const dir = join(core.base.home, 'lab-templates');
    return existsSync(dir) ? readdirSync(dir) : [];
  };

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'labtpl-ui-'));
    for (const name of [TEST_IMAGE, 'control-node']) {
      mkdirSync(join(state, 'images', name), { recursive: true });
      writeFileSync(
        join(state, 'images', name, 'image.json'),
        JSON.stringify({
          name,
          kind: 'kernel',
          createdAt: new Date().toISOString(),
          kernel: 'vmlinuz',
          initrd: 'initrd.img',
          cmdline: 'console=ttyS0',
          sizeBytes: 1,
          sha256: '0'.repeat(64),
        }),
      );
    }
    // The test image has golden values at the default size and at 2 CPUs / 1024 MiB; control-node none.
    writeFileSync(
      join(state, 'images', TEST_IMAGE, 'policy.json'),
      JSON.stringify({
        image_id: TEST_IMAGE,
        image_version: '1',
        pcrs: { initrd: [0, 11], ready: [0, 11, 13] },
        golden: { sha256: { 0: 'a'.repeat(64) } },
        golden_sizes: { '2x1024': { sha256: { 0: 'b'.repeat(64) } } },
      }),
    );
    const networks = new Networks(state);
    vms = new VmService({ stateDir: state, launcher: new FakeLauncher(), networkMode: (n) => networks.get(n).mode });
    server = createServer(createApiHandler({ stateDir: state, token: TOKEN, vms, networks, host: () => hostReport() }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    core = await testCore();
    attachLocalManager(core.base.home, {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      token: TOKEN,
      stateDir: state,
    });
    setTransport(coreTransport(core));
  }, 60_000);
  afterAll(async () => {
    cleanup();
    vms?.detach();
    await core?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    if (state) rmSync(state, { recursive: true, force: true });
  });

  it("lists the built-in test template, creates a two-VM template from the manager's images, shows a refusal, deletes", async () => {
    render(<LocalTemplatesPanel />);
    let panel = await screen.findByRole('region', { name: 'Local templates' });
    const builtIn = await within(panel).findByRole('listitem', { name: 'POV Desk test VM' });
    expect(within(builtIn).getByText('built-in')).toBeTruthy();
    expect(within(builtIn).getByText(`test-vm: ${TEST_IMAGE} (linux)`).textContent).toBe(
      `test-vm: ${TEST_IMAGE} (linux) · 2 CPUs, 2048 MiB, 20 GiB disk, attested`,
    );
    expect(within(builtIn).queryByRole('button', { name: /Delete/ })).toBeNull();

    fireEvent.click(within(panel).getByRole('button', { name: 'New local template' }));
    const form = await within(panel).findByRole('form', { name: 'New local template' });
    // the images come from the vm-manager; the first VM starts at 2 CPUs / 2048 MiB / 20 GiB
    const vm1 = await within(form).findByRole('group', { name: 'VM 1' });
    await waitFor(() =>
      expect(
        within(within(vm1).getByLabelText('Image'))
          .getAllByRole('option')
          .map((o) => o.textContent),
      ).toEqual(['control-node (kernel)', `${TEST_IMAGE} (kernel)`]),
    );
    expect(
      [within(vm1).getByLabelText('CPUs'), within(vm1).getByLabelText('Memory (MiB)'), within(vm1).getByLabelText('Disk (GiB)')].map(
        (i) => (i as HTMLInputElement).value,
      ),
    ).toEqual(['2', '2048', '20']);
    const create = within(form).getByRole('button', { name: 'Create' }) as HTMLButtonElement;
    expect(create.disabled).toBe(true); // no name yet

    fireEvent.change(within(form).getByLabelText('Local template name'), { target: { value: 'Two node' } });
    fireEvent.change(within(vm1).getByLabelText('VM name'), { target: { value: 'ctl' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Add VM' }));
    const vm2 = within(form).getByRole('group', { name: 'VM 2' });
    fireEvent.change(within(vm2).getByLabelText('VM name'), { target: { value: 'ctl' } }); // same name: refused by the core
    fireEvent.change(within(vm2).getByLabelText('Image'), { target: { value: TEST_IMAGE } });
    fireEvent.change(within(vm2).getByLabelText('Memory (MiB)'), { target: { value: '4096' } });
    // An attested VM warns where it would wait in attesting: no golden values, or a size none was learned at.
    const sizeWarning = () => within(vm2).queryByText(/PCRs move with the VM's size/)?.textContent ?? null;
    expect(sizeWarning()).toBeNull();
    fireEvent.click(within(vm2).getByRole('checkbox', { name: /Attested boot/ }));
    expect(sizeWarning()).toBe(
      `Image ${TEST_IMAGE}: golden values were learned at 2 CPUs and 2048 MiB, 2 CPUs and 1024 MiB, and the PCRs move with the ` +
        `VM's size: at 2 CPUs and 4096 MiB ` +
        'the quotes will not match and the VM will wait in attesting. Learn golden values at 2 CPUs and 4096 MiB (Local VMs, ' +
        'Images), create it at 2 CPUs and 2048 MiB, or create it without attestation.',
    );
    fireEvent.change(within(vm2).getByLabelText('Memory (MiB)'), { target: { value: '1024' } });
    expect(sizeWarning()).toBeNull(); // learned at that size
    fireEvent.change(within(vm2).getByLabelText('Memory (MiB)'), { target: { value: '4096' } });
    fireEvent.click(within(vm2).getByRole('checkbox', { name: /Attested boot/ }));
    expect(sizeWarning()).toBeNull(); // unattested: the size does not matter
    fireEvent.click(within(vm1).getByRole('checkbox', { name: /Attested boot/ }));
    expect(within(vm1).getByRole('status').textContent).toBe(
      'Image control-node has no golden PCR values yet: learn them on the Local VMs page, or leave this VM unattested.',
    );
    fireEvent.click(within(vm1).getByRole('checkbox', { name: /Attested boot/ }));
    fireEvent.click(create);
    await waitFor(() => expect(within(form).getByRole('alert').textContent).toMatch(/VM names must be unique/));
    expect(files()).toEqual([]);

    fireEvent.change(within(vm2).getByLabelText('VM name'), { target: { value: 'target' } });
    fireEvent.click(create);
    let made = await within(panel).findByRole('listitem', { name: 'Two node' }, { timeout: 10_000 });
    expect(within(made).getByText('ctl: control-node (linux)').textContent).toBe(
      'ctl: control-node (linux) · 2 CPUs, 2048 MiB, 20 GiB disk',
    );
    expect(within(made).getByText(`target: ${TEST_IMAGE} (linux)`).textContent).toBe(
      `target: ${TEST_IMAGE} (linux) · 2 CPUs, 4096 MiB, 20 GiB disk`,
    ); // the sizes saved, shown
    expect(within(panel).queryByRole('form')).toBeNull();
    const items = within(panel)
      .getAllByRole('listitem')
      .filter((li) => li.parentElement?.classList.contains('local-template-list'));
    expect(items.map((li) => li.getAttribute('aria-label'))).toEqual(['POV Desk test VM', 'Two node']);
    const saved = (await core.dispatcher.call('labTemplates.list', { platform: 'local' }, { transport: 'test' })) as {
      templates: { id: string }[];
    };
    expect(saved.templates.map((t) => t.id)[0]).toBe(TEST_TEMPLATE_ID);
    expect(files()).toHaveLength(1);
    expect(within(panel).queryByText(/image gone/)).toBeNull();

    // Edit: the form opens with what is saved; Save changes writes the same file under the same id.
    const [file] = files();
    fireEvent.click(within(made).getByRole('button', { name: 'Edit Two node' }));
    const editForm = await within(panel).findByRole('form', { name: 'Edit local template Two node' });
    const evm2 = await within(editForm).findByRole('group', { name: 'VM 2' });
    expect((within(editForm).getByLabelText('Local template name') as HTMLInputElement).value).toBe('Two node');
    expect(
      [within(evm2).getByLabelText('VM name'), within(evm2).getByLabelText('Image'), within(evm2).getByLabelText('Memory (MiB)')].map(
        (i) => (i as HTMLInputElement).value,
      ),
    ).toEqual(['target', TEST_IMAGE, '4096']);
    expect((within(evm2).getByRole('checkbox', { name: /Attested boot/ }) as HTMLInputElement).checked).toBe(false);
    fireEvent.change(within(evm2).getByLabelText('Memory (MiB)'), { target: { value: '1024' } });
    fireEvent.change(within(editForm).getByLabelText('Local template description'), { target: { value: 'edited' } });
    fireEvent.click(within(editForm).getByRole('button', { name: 'Save changes' }));
    await waitFor(() => expect(within(panel).queryByRole('form')).toBeNull());
    const after = (await core.dispatcher.call('labTemplates.list', { platform: 'local' }, { transport: 'test' })) as {
      templates: { id: string; description: string; vms: { memoryMib?: number }[] }[];
    };
    expect(after.templates[1]).toMatchObject({
      id: file!.replace(/\.json$/, ''),
      description: 'edited',
      vms: [{ memoryMib: 2048 }, { memoryMib: 1024 }],
    });
    expect(files()).toEqual([file]);
    made = await within(panel).findByRole('listitem', { name: 'Two node' });
    expect(within(made).queryByRole('button', { name: 'Edit POV Desk test VM' })).toBeNull();
    expect(within(within(panel).getByRole('listitem', { name: 'POV Desk test VM' })).queryByRole('button', { name: /Edit/ })).toBeNull();

    // An image deleted since the template was saved: its VM and the template say so, and what to do.
    rmSync(join(state, 'images', 'control-node'), { recursive: true });
    cleanup();
    render(<LocalTemplatesPanel />);
    panel = await screen.findByRole('region', { name: 'Local templates' });
    made = await within(panel).findByRole('listitem', { name: 'Two node' });
    expect((await within(made).findByText(/image gone/)).closest('li')!.textContent).toBe(
      'ctl: control-node (linux) · 2 CPUs, 2048 MiB, 20 GiB disk — image gone from the vm-manager',
    );
    expect(within(made).getByRole('status').textContent).toBe(
      'A POV from Two node would fail: bake or import the missing image again under the same name, or delete this template.',
    );
    expect(within(made).getByText(`target: ${TEST_IMAGE} (linux)`)).toBeTruthy(); // its image is there
    // its image is there too
    expect(within(within(panel).getByRole('listitem', { name: 'POV Desk test VM' })).queryByText(/— image/)).toBeNull();
    // Its form still shows the saved image, marked, rather than silently picking another.
    fireEvent.click(within(made).getByRole('button', { name: 'Edit Two node' }));
    const goneVm = await within(await within(panel).findByRole('form', { name: 'Edit local template Two node' })).findByRole('group', {
      name: 'VM 1',
    });
    const select = within(goneVm).getByLabelText('Image') as HTMLSelectElement;
    expect(select.value).toBe('control-node');
    expect(select.selectedOptions[0]?.textContent).toBe('control-node (gone from the vm-manager)');
    fireEvent.click(within(panel).getByRole('button', { name: 'Cancel' }));
    expect(within(panel).queryByRole('form')).toBeNull();

    fireEvent.click(within(made).getByRole('button', { name: 'Delete Two node' }));
    const confirm = within(made).getByRole('group', { name: 'Confirm delete Two node' });
    fireEvent.click(within(confirm).getByRole('button', { name: 'Keep' }));
    expect(within(made).queryByRole('group')).toBeNull();
    expect(files()).toHaveLength(1);
    fireEvent.click(within(made).getByRole('button', { name: 'Delete Two node' }));
    fireEvent.click(within(made).getByRole('button', { name: 'Delete template' }));
    await waitFor(() => expect(within(panel).queryByRole('listitem', { name: 'Two node' })).toBeNull());
    expect(files()).toEqual([]);
  });
});
