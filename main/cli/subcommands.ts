/** Whole command families that live with their domain (e.g. `povdesk vm-manager …`). */
export const subcommands: Record<string, (argv: string[]) => Promise<number>> = {
  doctor: async (argv) => (await import('./doctor')).runDoctorCli(argv),
  mcp: async (argv) => {
    if (argv.length === 0) return (await import('./mcp')).runMcpStdio(process.env);
    process.stderr.write(
      `${JSON.stringify({
        error: { code: 'invalid_request', message: `povdesk mcp takes no arguments, got ${argv[0]}; see povdesk --help` },
      })}\n`,
    );
    return 1;
  },
  'vm-manager': async (argv) => (await import('../vm-manager/cli')).runVmManagerCli(argv),
};
