/** Whole command families that live with their domain (e.g. `povdesk vm-manager …`). */
export const subcommands: Record<string, (argv: string[]) => Promise<number>> = {
  doctor: async (argv) => (await import('./doctor')).runDoctorCli(argv),
  mcp: async () => (await import('./mcp')).runMcpStdio(process.env),
  'vm-manager': async (argv) => (await import('../vm-manager/cli')).runVmManagerCli(argv),
};
