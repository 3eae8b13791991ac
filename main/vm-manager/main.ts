/** Entry for running the daemon alone: `node --import tsx main/vm-manager/main.ts serve …`. */
import { runVmManagerCli } from './cli';

runVmManagerCli(process.argv.slice(2)).then((code) => process.exit(code));
