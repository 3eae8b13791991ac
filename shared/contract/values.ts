/**
 * The contract's plain values that the renderer uses (no zod here). A contract file imports zod,
 * and one value import of it puts zod (~30 KiB gzip) into the renderer's bundle, so the
 * renderer imports these from this file; each contract file re-exports its own, for main/ and the
 * tests. test/bench/foundation.ts names any module that brings zod back into the first paint.
 */

/** Demo readiness levels (readiness.ts) and the badge words, the same in the list and the POV page. */
export const READINESS = ['ready', 'attention', 'not_ready'] as const;
export const READINESS_WORDS: Record<(typeof READINESS)[number], string> = {
  ready: 'ready',
  attention: 'attention',
  not_ready: 'not ready',
};
/** A checklist item's states: not_configured is an optional service not set up (neutral). */
export const READINESS_ITEM_STATES = ['ok', 'not_configured', 'attention', 'not_ready'] as const;

/**
 * The badge's words for a POV: a ready POV on this laptop's (or a remote) vm-manager is a
 * rehearsal, so it reads "ready to rehearse"; on Skytap it is "ready" (for the customer).
 */
export function readinessWords(level: (typeof READINESS)[number], platform: string): string {
  return level === 'ready' && platform === 'local' ? 'ready to rehearse' : READINESS_WORDS[level];
}

/**
 * Lines a terminal keeps above its screen: the window's xterm and the host's copy of it (the
 * catch-up mirror, main/services/ssh/mirror.ts) keep the same, so a picture restores all of it.
 */
export const TERM_SCROLLBACK = 10_000;

/** SSH keepalive: seconds between keepalives (0 sends none), the default and the most a profile may ask. */
export const KEEPALIVE_DEFAULT_SEC = 15;
export const KEEPALIVE_MAX_SEC = 3600;

/** A VM's operating system, as a POV or a local template names it (pov.ts). */
export const OS_VALUES = ['linux', 'windows', 'unknown'] as const;
export type GuestOs = (typeof OS_VALUES)[number];

/** The stages of a bake, in order (templates.ts). */
export const BAKE_STAGES = ['source', 'inspect', 'packages', 'bake', 'register', 'proof'] as const;

/** The most VMs a local template may hold (templates.ts). */
export const LOCAL_TEMPLATE_MAX_VMS = 8;

/** The deletion warning ladder's limits (notify.ts): steps in whole hours before deletion, and a new POV's auto-delete days. */
export const LADDER_MAX_STEPS = 8;
export const LADDER_MAX_HOURS = 24 * 90;
export const AUTO_DELETE_MAX_DAYS = 365;

/** What a doctor check found (doctor.ts), and the words the CLI and the Settings page show for it. */
export const DOCTOR_RESULTS = ['confirmed', 'contradicted', 'unknown'] as const;
export type DoctorResult = (typeof DOCTOR_RESULTS)[number];
export const DOCTOR_WORDS: Record<DoctorResult, string> = {
  confirmed: 'confirmed',
  contradicted: 'contradicted',
  unknown: 'could not tell',
};
