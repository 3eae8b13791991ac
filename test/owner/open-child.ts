/**
 * Opens (creating and migrating) the database given as argv[2] once both processes are ready:
 * waits until the wall clock reaches argv[3] (ms) so two children start at the same moment.
 * Prints "opened <version>" or the error.
 */
import { openDatabase, schemaVersion } from '../../main/services/store/db';

const [file, at] = [process.argv[2]!, Number(process.argv[3])];
while (Date.now() < at) {
  /* spin to the common start */
}
try {
  const db = openDatabase(file);
  process.stdout.write(`opened ${schemaVersion(db)}\n`);
  db.close();
} catch (err) {
  process.stdout.write(`error ${(err as Error).message}\n`);
  process.exitCode = 1;
}
