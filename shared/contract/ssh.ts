import { z } from 'zod';
import { lazySchema } from '../lazy-schema';
import { jobStarted, method, noArgs, ok, stream, lazyMethods } from './define';
import { KEEPALIVE_DEFAULT_SEC, KEEPALIVE_MAX_SEC, TERM_SCROLLBACK } from './values';

export { KEEPALIVE_DEFAULT_SEC, KEEPALIVE_MAX_SEC, TERM_SCROLLBACK };

const hostName = lazySchema(() =>
  z
    .string()
    .trim()
    .min(1)
    .max(253)
    .refine((s) => /^[A-Za-z0-9._:%\-[\]]+$/.test(s), 'must be a host name or IP address'),
);
const port = lazySchema(() => z.number().int().min(1).max(65535));
const username = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(64)
    .refine((s) => !/[\s\u0000-\u001f]/.test(s), 'must not contain spaces or control characters'),
);
const vmIdArg = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/, 'a VM id: letters, digits, - and _'),
);
const sessionId = lazySchema(() => z.string().min(1).max(100));
const profileId = lazySchema(() => z.string().min(1).max(100));
const size = { cols: z.number().int().min(2).max(1000), rows: z.number().int().min(1).max(500) };

/** How one hop authenticates. Inline secrets are held in memory for the session only. */
export const sshAuth = lazySchema(() =>
  z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('password'), password: z.string().min(1).max(1024) }),
    z.strictObject({
      kind: z.literal('privateKey'),
      privateKey: z.string().min(1).max(20_000),
      passphrase: z.string().max(1024).optional(),
    }),
    /** Use the credentials stored in the keychain for this profile. */
    z.strictObject({ kind: z.literal('profile'), profileId }),
    /** The user's SSH agent signs (SSH_AUTH_SOCK; on Windows OpenSSH's agent pipe): no key passes through POV Desk. */
    z.strictObject({ kind: z.literal('agent') }),
  ]),
);
export type SshAuth = z.infer<typeof sshAuth>;

/** A jump host (ProxyJump). Without auth it reuses the target's credentials. */
export const sshHop = lazySchema(() => z.strictObject({ host: hostName, port: port.default(22), username, auth: sshAuth.optional() }));
export type SshHop = z.infer<typeof sshHop>;

export const sshTarget = lazySchema(() =>
  z.strictObject({
    host: hostName,
    port: port.default(22),
    username,
    auth: sshAuth,
    jump: z.array(sshHop).max(8).default([]),
    keepaliveSec: z.number().int().min(0).max(KEEPALIVE_MAX_SEC).default(KEEPALIVE_DEFAULT_SEC),
    autoReconnect: z.boolean().default(true),
    title: z.string().max(200).optional(),
  }),
);
export type SshTarget = z.infer<typeof sshTarget>;

export const sshProfile = lazySchema(() =>
  z.strictObject({
    id: profileId,
    name: z.string(),
    host: z.string(),
    port,
    username: z.string(),
    authKind: z.enum(['key', 'password', 'agent']),
    /** OpenSSH one-line public key for key profiles (paste it into authorized_keys). */
    publicKey: z.string().nullable(),
    jump: z.array(z.strictObject({ host: z.string(), port, username: z.string(), profileId: profileId.nullable() })),
    keepaliveSec: z.number().int(),
    autoReconnect: z.boolean(),
    agentForward: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);
export type SshProfile = z.infer<typeof sshProfile>;

export const sshProfileSave = lazySchema(() =>
  z.strictObject({
    id: profileId.optional(),
    name: z.string().trim().min(1).max(200),
    host: hostName,
    port: port.default(22),
    username,
    /** generate: new ed25519 key; import: an OpenSSH/PEM private key; password; agent: the SSH agent; keep: leave stored credentials. */
    credentials: z.discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('generate') }),
      z.strictObject({
        kind: z.literal('import'),
        privateKey: z.string().min(1).max(20_000),
        passphrase: z.string().max(1024).optional(),
      }),
      z.strictObject({ kind: z.literal('password'), password: z.string().min(1).max(1024) }),
      z.strictObject({ kind: z.literal('keep') }),
      /** the user's SSH agent signs; nothing is stored */
      z.strictObject({ kind: z.literal('agent') }),
    ]),
    jump: z
      .array(z.strictObject({ host: hostName, port: port.default(22), username, profileId: profileId.nullable().default(null) }))
      .max(8)
      .default([]),
    keepaliveSec: z.number().int().min(0).max(KEEPALIVE_MAX_SEC).default(KEEPALIVE_DEFAULT_SEC),
    autoReconnect: z.boolean().default(true),
    agentForward: z.literal(false).default(false),
  }),
);
export type SshProfileSave = z.input<typeof sshProfileSave>;

export const knownHost = lazySchema(() =>
  z.strictObject({ host: z.string(), port, keyType: z.string(), fingerprint: z.string(), addedAt: z.string() }),
);

const opensshHop = lazySchema(() => z.strictObject({ host: z.string(), port, username: z.string() }));
/** A host named in the user's ~/.ssh/config, resolved as `ssh <alias>` would resolve it. */
export const opensshHost = lazySchema(() =>
  z.strictObject({
    alias: z.string(),
    host: z.string(),
    port,
    username: z.string(),
    jump: z.array(opensshHop),
    identityFiles: z.array(z.string()),
    keepaliveSec: z.number().int().nullable(),
    proxyCommand: z.string().nullable(),
  }),
);
export type OpensshHost = z.infer<typeof opensshHost>;
export const opensshHosts = lazySchema(() =>
  z.strictObject({
    /** The file read; null when none is configured (POVDESK_SSH_CONFIG set and empty). */
    file: z.string().nullable(),
    hosts: z.array(opensshHost),
    /** Lines skipped and why (a Match block, a bad port, an unreadable include). */
    problems: z.array(z.string()),
  }),
);
export type OpensshHosts = z.infer<typeof opensshHosts>;

export const SSH_STATES = ['connecting', 'verifying', 'authenticating', 'open', 'reconnecting', 'closed'] as const;
export const sshStatus = lazySchema(() =>
  z.strictObject({
    sessionId,
    state: z.enum(SSH_STATES),
    /** Why it closed: user (closed by you), dropped (connection lost), exited (the shell ended), refused, failed. */
    closedBy: z.enum(['user', 'dropped', 'exited', 'refused', 'failed']).nullable(),
    reason: z.string().nullable(),
    attempt: z.number().int().min(0),
    nextRetryMs: z.number().int().nullable(),
    title: z.string(),
    interactive: z.boolean(),
  }),
);
export type SshStatus = z.infer<typeof sshStatus>;

export const hostKeyPrompt = lazySchema(() =>
  z.strictObject({
    promptId: z.string(),
    sessionId,
    host: z.string(),
    port,
    /** first: never seen; changed: differs from the stored key (replace: true required to accept). */
    kind: z.enum(['first', 'changed']),
    keyType: z.string(),
    fingerprint: z.string(),
    /** The key it differs from: POV Desk's own, or (source set) one in OpenSSH's known_hosts, addedAt being that file's last change. */
    stored: z.strictObject({ keyType: z.string(), fingerprint: z.string(), addedAt: z.string(), source: z.string().optional() }).nullable(),
    /** pending until answered; answered/expired tell other windows to drop the dialog. */
    state: z.enum(['pending', 'answered', 'expired']),
  }),
);
export type HostKeyPrompt = z.infer<typeof hostKeyPrompt>;

export const sshData = lazySchema(() =>
  z.strictObject({
    /** Terminal output bytes: a binary WebSocket frame in browser mode, a Uint8Array over IPC. */
    // any Uint8Array, a Node Buffer's pooled one included (z.instanceof types it as Uint8Array<ArrayBuffer>)
    data: z.custom<Uint8Array>((v) => v instanceof Uint8Array, { error: 'expected bytes (a Uint8Array)' }),
    /** Acknowledge this many bytes once rendered. */
    bytes: z.number().int().min(0),
  }),
);
export type SshData = z.infer<typeof sshData>;

/** ssh.replay's answer travels in a JSON reply, so its bytes are base64. */
export const sshReplay = lazySchema(() =>
  z.strictObject({
    /** Terminal output bytes, base64. */
    data: z.string(),
    /** Decoded length. */
    bytes: z.number().int().min(0),
  }),
);

export const sshMethods = lazyMethods({
  'ssh.open': () =>
    method(
      'Open a terminal session from a saved profile or an ad-hoc target; host-key prompts arrive on ssh.hostKeyPrompt',
      z
        .strictObject({ profileId: profileId.optional(), target: sshTarget.optional(), ...size })
        .refine((a) => (a.profileId === undefined) !== (a.target === undefined), 'give exactly one of profileId or target'),
      z.strictObject({ sessionId }),
    ),
  'ssh.openVmConsole': () =>
    method(
      "Open a local VM's serial console as a terminal session: interactive through QEMU's serial socket, or (default) a read-only " +
        "live tail of its console log. Use the sessionId like an SSH session's",
      z.strictObject({
        vmId: vmIdArg,
        interactive: z.boolean().optional(),
        ...size,
      }),
      z.strictObject({ sessionId }),
    ),
  'ssh.openVmSsh': () =>
    method(
      'Open an SSH session as root into a local VM through its forwarded port, signed in with the key the local vm-manager holds ' +
        "for that VM (the key stays in the app's main process); the host key is the attested VM's, else asked on first use",
      z.strictObject({ vmId: vmIdArg, ...size }),
      z.strictObject({ sessionId, title: z.string() }),
    ),
  'ssh.input': () => method('Send keystrokes (utf8) to a session', z.strictObject({ sessionId, data: z.string().max(1_000_000) }), ok),
  'ssh.resize': () => method('Tell the remote side the terminal size', z.strictObject({ sessionId, ...size }), ok),
  'ssh.close': () => method('Close a session (reported as closed by you)', z.strictObject({ sessionId }), ok),
  'ssh.reconnect': () => method('Reconnect a dropped or closed session now', z.strictObject({ sessionId }), ok),
  'ssh.replay': () =>
    method(
      'What a session shows, for a window attaching to it: a reset, then its screen and scrollback as terminal output (subscribe ' +
        'to ssh.data right after)',
      z.strictObject({ sessionId }),
      sshReplay,
    ),
  'ssh.sessions.list': () => method('Sessions held by the app and their state', noArgs, z.array(sshStatus)),
  'ssh.answerHostKey': () =>
    method(
      'Accept or reject a host key; a changed key is only accepted with replace: true',
      z.strictObject({ promptId: z.string().min(1).max(100), accept: z.boolean(), replace: z.boolean().optional() }),
      ok,
    ),
  'ssh.hostKeyPrompts.list': () => method('Host-key questions waiting for an answer', noArgs, z.array(hostKeyPrompt)),
  'ssh.typeInto': () =>
    method(
      'Type a script into a session line by line at a safe pace, then compare sha256sum of what arrived',
      z.strictObject({
        sessionId,
        script: z.string().min(1).max(2_000_000),
        path: z
          .string()
          .max(200)
          .refine((p) => /^\/[A-Za-z0-9._/-]+$/.test(p), 'must be an absolute path of letters, digits, . _ - /')
          .optional(),
        lineDelayMs: z.number().int().min(0).max(5000).optional(),
      }),
      jobStarted,
      { job: true },
    ),
  'ssh.profiles.list': () => method('Saved SSH profiles (no secrets)', noArgs, z.array(sshProfile)),
  'ssh.profiles.save': () => method('Create or update a profile; keys and passwords go to the keychain', sshProfileSave, sshProfile),
  'ssh.profiles.delete': () => method('Delete a profile and its keychain entries', z.strictObject({ id: profileId }), ok),
  'ssh.knownHosts.list': () => method('Accepted host keys', noArgs, z.array(knownHost)),
  'ssh.opensshHosts': () =>
    method(
      "The hosts named in the user's ~/.ssh/config (read, never written), each resolved as `ssh <name>` would: address, user, " +
        'port, jump hosts, identity files',
      noArgs,
      opensshHosts,
    ),
  'ssh.knownHosts.remove': () =>
    method(
      'Forget the stored key of host:port (the next connection asks again)',
      z.strictObject({ host: hostName, port }),
      z.strictObject({ removed: z.boolean() }),
    ),
});

export const sshStreams = {
  'ssh.data': stream('Terminal output of a session, keyed by session id', sshData, 'manual'),
  'ssh.status': stream('Session state changes, keyed by session id (and "*")', sshStatus),
  'ssh.hostKeyPrompt': stream('Host-key questions, key "*"', hostKeyPrompt),
};
