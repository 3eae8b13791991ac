import { z } from 'zod';
import { lazySchema } from '../../../shared/lazy-schema';
import { AppError } from '../../../shared/contract/errors';
import { replyError, send, type HttpOptions } from './http';

/**
 * What the wiring asks of the control node's agent, through the control plane
 * (docs/control-plane.md, "Containers and tasks"): run or remove a named container beside the
 * agent (the Jumpoint with its DEPLOY_KEY) and run the Resource Broker installer on a Windows VM
 * over WinRM. Both are PUT/DELETE by name, so a re-run after a crash changes nothing.
 */
export interface ContainerSpec {
  image: string;
  env: Record<string, string>;
  args: string[];
}

export interface AgentTasks {
  runContainer(agentId: string, name: string, spec: ContainerSpec, signal?: AbortSignal): Promise<{ state: string }>;
  removeContainer(agentId: string, name: string, signal?: AbortSignal): Promise<'removed' | 'already_gone'>;
  installBroker(agentId: string, host: string, installKey: string, signal?: AbortSignal): Promise<{ state: string }>;
}

const PRODUCT = 'the control plane';
const REMEDY = 'check Settings → Control node and that the control node is enrolled';
const stateSchema = lazySchema(() => z.object({ state: z.string().min(1).max(64) }).loose());

export class HttpAgentTasks implements AgentTasks {
  private readonly base: string;
  constructor(
    url: string,
    private readonly token: string,
    private readonly opts: HttpOptions = {},
  ) {
    this.base = url.replace(/\/+$/, '');
  }

  private async put(path: string, body: unknown, signal?: AbortSignal) {
    const r = await send(
      PRODUCT,
      {
        method: 'PUT',
        url: `${this.base}${path}`,
        headers: { authorization: `Bearer ${this.token}` },
        json: body,
        ...(signal ? { signal } : {}),
      },
      this.opts,
    );
    if (r.status >= 400)
      throw replyError('The control plane', `PUT ${path.replace(/broker-install\/.*/, 'broker-install/…')}`, r, errorText(r.json), REMEDY);
    const p = stateSchema.safeParse(r.json);
    if (!p.success) throw new AppError('unavailable', `the control plane answered ${path} with a body this client cannot read`);
    return { state: p.data.state };
  }

  runContainer(agentId: string, name: string, spec: ContainerSpec, signal?: AbortSignal) {
    return this.put(`/v1/agents/${encodeURIComponent(agentId)}/containers/${encodeURIComponent(name)}`, spec, signal);
  }

  async removeContainer(agentId: string, name: string, signal?: AbortSignal) {
    const path = `/v1/agents/${encodeURIComponent(agentId)}/containers/${encodeURIComponent(name)}`;
    const r = await send(
      PRODUCT,
      { method: 'DELETE', url: `${this.base}${path}`, headers: { authorization: `Bearer ${this.token}` }, ...(signal ? { signal } : {}) },
      this.opts,
    );
    if (r.status === 404) return 'already_gone' as const;
    if (r.status >= 400) throw replyError('The control plane', `DELETE ${path}`, r, errorText(r.json), REMEDY);
    return 'removed' as const;
  }

  installBroker(agentId: string, host: string, installKey: string, signal?: AbortSignal) {
    return this.put(`/v1/agents/${encodeURIComponent(agentId)}/broker-install/${encodeURIComponent(host)}`, { installKey }, signal);
  }
}

function errorText(json: unknown): string {
  const e = (json as { error?: { message?: unknown } } | null)?.error;
  return typeof e?.message === 'string' ? e.message : '';
}
