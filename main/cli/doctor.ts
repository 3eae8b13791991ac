import { AppError, toWireError } from '../../shared/contract';
import { DOCTOR_WORDS, type DoctorReport } from '../../shared/contract/doctor';
import { reachCore } from './call';
import { parseFlags } from '../lib/flags';

const USAGE = `povdesk doctor [--bundle] [--json]

Reads every account POV Desk holds credentials for (Skytap, each POV's BeyondTrust tenants, a remote
vm-manager, the control plane), read-only, and says for each thing POV Desk assumes about it whether
it was confirmed, contradicted (and what was seen) or could not be told. Nothing is created, changed
or deleted. --bundle also writes a support bundle (this report, versions, settings without secrets,
the last log lines; every known secret removed) under the data directory and prints its path.
--json prints the report as JSON. Exit 0, or 2 when an assumption was contradicted.`;

export function formatReport(r: DoctorReport): string {
  const lines = r.checks.map(
    (c) =>
      `${DOCTOR_WORDS[c.result].padEnd(14)} ${c.id}  (${c.subject})` +
      `\n               ${c.seen}${c.result === 'contradicted' ? `\n               assumed: ${c.assumption} — ${c.doc}` : ''}`,
  );
  return (
    `${lines.join('\n')}\n\n` +
    `${r.counts.confirmed} confirmed, ${r.counts.contradicted} contradicted, ${r.counts.unknown} could not tell (${r.checkedAt})\n`
  );
}

export async function runDoctorCli(
  argv: string[],
  io = { out: (s: string) => void process.stdout.write(s), err: (s: string) => void process.stderr.write(s), env: process.env },
): Promise<number> {
  let values;
  try {
    const options = { bundle: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
    const flags = parseFlags(argv, options, 'povdesk doctor --help', (m) => new AppError('invalid_request', m));
    if (flags.positionals.length)
      throw new AppError('invalid_request', `doctor takes no argument ${JSON.stringify(flags.positionals[0])}; see povdesk doctor --help`);
    values = flags.values;
  } catch (err) {
    io.err(`${JSON.stringify({ error: toWireError(err) })}\n`);
    return 1;
  }
  if (values.help) {
    io.out(`${USAGE}\n`);
    return 0;
  }
  const method = values.bundle ? 'doctor.bundle' : 'doctor.run';
  try {
    const reached = await reachCore(io.env, 'doctor');
    let result: unknown;
    if ('client' in reached) {
      try {
        result = await reached.client.call(method, {});
      } finally {
        reached.client.close();
      }
    } else {
      try {
        result = await reached.core.dispatcher.call(method, {}, { transport: 'cli' });
      } finally {
        await reached.core.close();
      }
    }
    const report = (method === 'doctor.bundle' ? (result as { report: DoctorReport }).report : result) as DoctorReport;
    io.out(values.json ? `${JSON.stringify(result, null, 2)}\n` : formatReport(report));
    if (method === 'doctor.bundle' && !values.json) io.out(`support bundle: ${(result as { path: string }).path}\n`);
    return report.counts.contradicted > 0 ? 2 : 0;
  } catch (err) {
    io.err(`${JSON.stringify({ error: toWireError(err) })}\n`);
    return 1;
  }
}
