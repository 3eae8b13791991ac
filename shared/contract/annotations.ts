import type { MethodName } from './index';

/**
 * What a caller may assume about each contract method before calling it — the hints an MCP client
 * shows a model (readOnlyHint, destructiveHint, idempotentHint) and `povdesk --help` prints. Kept
 * beside the contract, one line per method; the type makes a missing or unknown method a compile
 * error. `notOverMcp` says why a method is not offered to an assistant (it takes a secret, or
 * only makes sense with a stream subscription).
 */
export interface MethodHints {
  readonly readOnly: boolean;
  readonly destructive: boolean;
  readonly idempotent: boolean;
  readonly notOverMcp?: string;
  /** The secret its arguments carry: `povdesk call` warns when they come on the command line. */
  readonly takesSecret?: string;
}

const read: MethodHints = { readOnly: true, destructive: false, idempotent: true };
/** Changes state; calling it twice does more than once (starts a second job, sends keys twice). */
const write: MethodHints = { readOnly: false, destructive: false, idempotent: false };
/** Changes state; a repeat with the same arguments changes nothing more. */
const sets: MethodHints = { readOnly: false, destructive: false, idempotent: true };
/** Removes or stops something that cannot be brought back as it was. */
const destroys: MethodHints = { readOnly: false, destructive: true, idempotent: true };
/** Where a secret may go in from a shell: not the command line, which every local user can read. */
export const SECRET_ARGS_ADVICE =
  'give `povdesk call <method>` the JSON on standard input (`-`) or in a file (`@path`), never on its command line';
const takesSecret = (what: string): MethodHints => ({
  ...sets,
  takesSecret: what,
  notOverMcp: `takes ${what}; use the app, or ${SECRET_ARGS_ADVICE}`,
});
/** Answers with a secret (a share link's password): secrets never cross MCP. */
const returnsSecret = (what: string, base: MethodHints): MethodHints => ({
  ...base,
  notOverMcp: `answers with ${what}; use the app or \`povdesk call\``,
});
const needsStream = (stream: string, instead: string): MethodHints => ({
  ...write,
  notOverMcp: `is only useful with a ${stream} stream subscription, which MCP does not carry; use ${instead}`,
});

export const methodHints = {
  'app.info': read,
  'app.diagnostics': read,
  'doctor.run': read,
  'doctor.bundle': write,
  'settings.get': read,
  'settings.saveSkytap': takesSecret('the Skytap API token'),
  'settings.clearSkytapToken': destroys,
  'settings.removeSkytap': destroys,
  'jobs.list': read,
  'jobs.get': read,
  'jobs.cancel': destroys,
  'skytap.testConnection': read,
  'skytap.testForm': takesSecret('the Skytap API token'),
  'skytap.listTemplates': read,
  'pov.create': write,
  'pov.list': read,
  'pov.get': read,
  'pov.start': sets,
  'pov.suspend': sets,
  'pov.destroy': destroys,
  'pov.refreshVms': sets,
  'pov.setVmOs': sets,
  'pov.setCustomerTz': sets,
  'pov.setInternetAccess': sets,
  'pov.snapshot': sets,
  'pov.reset': destroys,
  'reconcile.runNow': sets,
  'bake.runnerScript': read,
  'controlNode.previewBootstrap': read,
  'controlNode.getSettings': read,
  'controlNode.saveSettings': takesSecret('the control-plane token'),
  'bake.start': write,
  'bake.list': read,
  'bake.export': sets,
  'labTemplates.list': read,
  'labTemplates.create': write,
  'labTemplates.update': sets,
  'labTemplates.delete': destroys,
  'pov.setControlNodeName': sets,
  'pov.setRoleHosts': sets,
  'pov.installControlNode': sets,
  // Moving the auto-delete time earlier brings the environment's deletion forward.
  'pov.setAutoDelete': destroys,
  'pov.readiness': read,
  'share.create': returnsSecret("the share link's generated password", write),
  'share.list': read,
  'share.extend': sets,
  'share.rotatePassword': returnsSecret("the share link's new password", write),
  'share.password': returnsSecret("the share link's password", read),
  'share.revoke': destroys,
  'notify.list': read,
  'notify.markRead': sets,
  'notify.getSettings': read,
  'notify.setSettings': sets,
  'pam.saveTenants': takesSecret('tenant client secrets, API keys and passwords'),
  'pam.test': read,
  'pam.wire': sets,
  'pam.status': read,
  'pam.unwire': destroys,
  'pam.getSettings': read,
  // The Jumpoint image and its docker run flags run on every POV's control node beside the Docker
  // socket: an assistant (or a prompt injected into one) must not choose them.
  'pam.saveSettings': {
    ...sets,
    notOverMcp:
      'sets the POV Gateway container image and its docker run flags, which every control node runs; use the app or `povdesk call`',
  },
  'vm.connection': read,
  'vm.setConnection': takesSecret("a remote vm-manager's bearer token"),
  'vm.host': read,
  'vm.images': read,
  'vm.list': read,
  'vm.get': read,
  'vm.create': write,
  'vm.start': sets,
  'vm.stop': destroys,
  'vm.reboot': destroys,
  'vm.delete': destroys,
  'vm.console': read,
  'vm.consoleFollow': needsStream('vm.console', 'vm.console'),
  'vm.attestation': read,
  'vm.imageBuildTest': sets,
  'vm.learnGolden': write,
  // Golden values decide which boots attestation trusts: a person reviews the learned table first.
  'vm.saveGolden': {
    ...sets,
    notOverMcp:
      'saves golden PCR values, which decide what attestation trusts; review the learned values and save them in the app or with ' +
      '`povdesk call`',
  },
  'vm.remakeReferences': sets,
  'vm.login': { ...write, notOverMcp: 'is a person logging in at the identity provider; use the app' },
  'vm.logout': destroys,
  // A command as root in the guest can delete or change anything there.
  'vm.exec': { ...write, destructive: true },
  'vm.forward': sets,
  'vm.forwards': read,
  'vm.unforward': destroys,
  'ssh.open': takesSecret('an ad-hoc target with a password or private key'),
  'ssh.openVmConsole': write,
  'ssh.openVmSsh': write,
  'ssh.input': write,
  'ssh.resize': sets,
  'ssh.close': destroys,
  'ssh.reconnect': write,
  'ssh.replay': read,
  'ssh.sessions.list': read,
  'ssh.answerHostKey': sets,
  'ssh.hostKeyPrompts.list': read,
  // Keystrokes into a live terminal run whatever they spell.
  'ssh.typeInto': { ...write, destructive: true },
  'ssh.profiles.list': read,
  'ssh.profiles.save': takesSecret('a private key or password'),
  'ssh.profiles.delete': destroys,
  'ssh.knownHosts.list': read,
  'ssh.knownHosts.remove': destroys,
  'ssh.opensshHosts': read,
} as const satisfies Record<MethodName, MethodHints>;

/** Short tags for `povdesk --help`, e.g. `[read-only]`, `[destructive]`, `[not over MCP: …]`. */
export function hintTags(h: MethodHints): string {
  const tags = [h.readOnly ? 'read-only' : h.destructive ? 'destructive' : 'changes state'];
  if (!h.readOnly && h.idempotent) tags.push('idempotent');
  if (h.notOverMcp) tags.push(`not over MCP: ${h.notOverMcp}`);
  return tags.map((t) => `[${t}]`).join(' ');
}
