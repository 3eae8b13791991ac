/** Whole command families that live with their domain (e.g. `povdesk vm-manager …`). */
export const subcommands: Record<string, (argv: string[]) => Promise<number>> = {};
