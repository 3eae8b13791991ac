import AxeBuilder from '@axe-core/playwright';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from './fixtures';
import { missingHostTools, stopManager } from './local-vm-helpers';

/**
 * Templates → Local templates in a real browser against the app's own vm-manager (started by the
 * app for this home): the built-in test template is listed first; "New local template" offers the
 * manager's images (one is placed in its image store first: only its listing is used, nothing
 * boots), saves a template, passes axe with the form open, and Delete asks first.
 */
test.describe('Local templates', () => {
  test.skip(missingHostTools.length > 0 && process.env.CI !== 'true', `missing ${missingHostTools.join(', ')}`);

  test("built-in first; a template made from the vm-manager's images is listed, then deleted after a confirm", async ({ app }, info) => {
    test.setTimeout(120_000);
    const { page } = app;
    const img = join(app.home, 'vm-manager', 'images', 'control-node');
    mkdirSync(img, { recursive: true });
    writeFileSync(
      join(img, 'image.json'),
      JSON.stringify({
        name: 'control-node',
        kind: 'kernel',
        createdAt: new Date().toISOString(),
        kernel: 'vmlinuz',
        initrd: 'initrd.img',
        cmdline: 'console=ttyS0',
        sizeBytes: 1,
        sha256: '0'.repeat(64),
      }),
    );
    try {
      await app.open('Templates');
      const panel = page.getByRole('region', { name: 'Local templates' });
      const builtIn = panel.getByRole('listitem', { name: 'POV Desk test VM' });
      await expect(builtIn).toContainText('built-in');
      await expect(builtIn).toContainText('test-vm: povdesk-test (linux)');

      await panel.getByRole('button', { name: 'New local template' }).click();
      const form = panel.getByRole('form', { name: 'New local template' });
      const vm1 = form.getByRole('group', { name: 'VM 1' });
      // the app starts its vm-manager to read the images
      await expect(vm1.getByLabel('Image')).toHaveValue('control-node', { timeout: 60_000 });
      await expect(vm1.getByLabel('Memory (MiB)')).toHaveValue('2048');
      await form.getByLabel('Local template name').fill('E2E node');
      await vm1.getByLabel('VM name').fill('ctl');

      const axe = await new AxeBuilder({ page })
        .setLegacyMode(true)
        .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
        .include('.local-templates')
        .analyze();
      expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help}`)).toEqual([]);

      await panel.screenshot({ path: info.outputPath('new-local-template.png') }); // for a reviewer, not compared
      await form.getByRole('button', { name: 'Create' }).click();
      const made = panel.getByRole('listitem', { name: 'E2E node' });
      await expect(made).toContainText('ctl: control-node (linux)');
      await expect(form).toHaveCount(0);
      const dir = join(app.home, 'lab-templates');
      expect(readdirSync(dir)).toHaveLength(1);

      await made.getByRole('button', { name: 'Delete E2E node' }).click();
      await made.getByRole('group', { name: 'Confirm delete E2E node' }).getByRole('button', { name: 'Delete template' }).click();
      await expect(made).toHaveCount(0);
      expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
    } finally {
      await stopManager(app.home);
    }
  });
});
