import { afterEach } from 'vitest';
import { SkytapClient, type RetryBudget, type RetryInfo, type SkytapClientOptions } from '../../main/services/skytap/client';
import { startEmulator, type Emulator, type EmulatorOptions } from '../skytap-emulator';

/** Emulators started by a test are closed after it. */
const open: Emulator[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

export async function emulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({ timing: { createBusyMs: 40, runstateBusyMs: 40, deleteMs: 40, rateLimitedMs: 60 }, ...opts });
  open.push(emu);
  return emu;
}

/** A sleep that records what it was asked to wait and waits `scale` of it for real. */
export function recordingSleep(scale = 0): { sleep: (ms: number, signal?: AbortSignal) => Promise<void>; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        waits.push(ms);
        if (signal?.aborted) return reject(signal.reason);
        const t = setTimeout(resolve, ms * scale);
        signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            reject(signal.reason);
          },
          { once: true },
        );
      }),
  };
}

export const TEST_BUDGET: RetryBudget = { maxRetries: 5, fallbackWaitMs: 7_000, maxTotalWaitMs: 120_000 };

export function client(
  emu: Emulator,
  opts: SkytapClientOptions & { projectId?: string; token?: string; username?: string } = {},
): { c: SkytapClient; waits: number[]; retries: RetryInfo[] } {
  const rec = recordingSleep(0);
  const retries: RetryInfo[] = [];
  const c = new SkytapClient(
    {
      baseUrl: emu.url,
      username: opts.username ?? emu.state.credentials.username,
      token: opts.token ?? emu.state.credentials.token,
      ...(opts.projectId ? { projectId: opts.projectId } : {}),
    },
    {
      budget: opts.budget ?? TEST_BUDGET,
      sleep: opts.sleep ?? rec.sleep,
      onRetry: (i) => retries.push(i),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.maxReplyBytes ? { maxReplyBytes: opts.maxReplyBytes } : {}),
    },
  );
  return { c, waits: rec.waits, retries };
}

/** Awaits a promise expected to reject and returns the error. */
export async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; detail: Record<string, unknown> }> {
  try {
    await p;
  } catch (err) {
    return err as { code: string; message: string; detail: Record<string, unknown> };
  }
  throw new Error('expected the call to fail, and it succeeded');
}
