import { runCli } from './index';

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(JSON.stringify({ error: { code: 'internal', message: String(err?.message ?? err) } }) + '\n');
    process.exitCode = 1;
  },
);
