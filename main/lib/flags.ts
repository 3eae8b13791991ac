import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/**
 * A command's flags and positionals by `node:util` `parseArgs` (strict): an unknown flag, a
 * missing value or a value given to a switch is refused with one line naming the flag and where
 * its help is (`fail` makes the caller's error type), before the command does anything.
 */
export function parseFlags<const O extends ParseArgsOptionsConfig>(
  args: string[],
  options: O,
  help: string,
  fail: (message: string, flag: string) => Error,
) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    const code = (e as { code?: string }).code;
    const message = (e as Error).message;
    const flag = /'(-[^' ]*)/.exec(message)?.[1] ?? '';
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw fail(`unknown option ${flag}; see ${help}`, flag);
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      throw fail(
        /does not take an argument/.test(message) ? `${flag} takes no value; see ${help}` : `${flag} needs a value; see ${help}`,
        flag,
      );
    }
    throw e;
  }
}
