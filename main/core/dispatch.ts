import type { z } from 'zod';
import { AppError, describeZodError, isMethodName, methods, type MethodName, type ParsedArgs, type Result } from '../../shared/contract';
import type { Logger } from '../services/log/logger';

export interface CallInfo {
  transport: 'ipc' | 'ws' | 'cli' | 'test';
}

export type HandlerMap<K extends MethodName> = {
  [M in K]: (args: ParsedArgs<M>, call: CallInfo) => Promise<Result<M>> | Result<M>;
};
export type Handlers = Partial<HandlerMap<MethodName>>;

/** A domain's handlers, typed from its own contract file. */
export type DomainHandlers<T extends Record<string, { args: z.ZodType; result: z.ZodType }>> = {
  [M in keyof T]: (args: z.output<T[M]['args']>, call: CallInfo) => Promise<z.output<T[M]['result']>>;
};

/**
 * The single gate every transport goes through: unknown methods and arguments that do not match
 * the contract are refused with invalid_request before any handler runs; results are checked
 * against the contract on the way out.
 */
export class Dispatcher {
  constructor(
    private readonly handlers: Handlers,
    private readonly log: Logger,
  ) {}

  has(method: MethodName): boolean {
    return typeof this.handlers[method] === 'function';
  }

  async call(method: unknown, args: unknown, info: CallInfo): Promise<unknown> {
    if (!isMethodName(method)) {
      throw new AppError('invalid_request', `unknown method ${JSON.stringify(method)}; \`povdesk --help\` lists them`);
    }
    const def = methods[method];
    const parsed = def.args.safeParse(args === undefined ? {} : args);
    if (!parsed.success) {
      throw new AppError('invalid_request', describeZodError(`invalid arguments for ${method}`, parsed.error));
    }
    const handler = this.handlers[method] as ((a: unknown, c: CallInfo) => unknown) | undefined;
    if (!handler) throw new AppError('unsupported', `${method} is not available in this build`);
    const started = Date.now();
    try {
      const result = await handler(parsed.data, info);
      const checked = def.result.safeParse(result);
      if (!checked.success) {
        this.log.error('handler returned a result outside the contract', {
          method,
          problem: describeZodError('result', checked.error),
        });
        throw new AppError('internal', `${method} produced an answer the UI cannot read; see the log`);
      }
      return checked.data;
    } catch (err) {
      if (!(err instanceof AppError) || err.code === 'internal') {
        this.log.error('call failed', { method, transport: info.transport, error: (err as Error)?.message, ms: Date.now() - started });
      }
      throw err;
    }
  }
}
