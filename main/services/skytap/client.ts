import type { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import { SkytapHttp, validId } from './http';
import { fetchPage, walkPages } from './pagination';
import {
  environmentList,
  environmentSchema,
  templateList,
  templateSchema,
  userDataSchema,
  vmList,
  type Environment,
  type Template,
  type Vm,
} from './schemas';

export {
  BUDGETS,
  DEFAULT_SKYTAP_URL,
  DEFAULT_TIMEOUT_MS,
  MAX_REPLY_BYTES,
  parseRetryAfter,
  type RetryBudget,
  type RetryInfo,
  type SkytapClientOptions,
  type SkytapConfig,
} from './http';
export { PAGE_SIZE, parseContentRange } from './pagination';

/**
 * Skytap's endpoints: templates, environments and their VMs. Every request goes through
 * SkytapHttp (auth, keep_idle, retries, error mapping: http.ts) and every collection through
 * walkPages (pagination.ts); the sharing-portal and schedule endpoints are in share-api.ts.
 */

/** Skytap's documented limit for user_data contents (characters). */
export const USER_DATA_MAX = 16384;

export class SkytapClient extends SkytapHttp {
  // ---- templates ---------------------------------------------------------------------------

  /** One page of the template catalogue (project-scoped when a Project ID is set). */
  async listTemplatesPage(count: number, offset: number): Promise<{ items: Template[]; total: number }> {
    const page = await fetchPage(this, this.collectionPath('templates'), count, offset, templateList);
    return { items: page.items, total: page.total };
  }

  /** Every template, walking every page. */
  listTemplates(): Promise<Template[]> {
    return this.walk(this.collectionPath('templates'), templateList);
  }

  async getTemplate(id: string): Promise<Template | null> {
    const r = await this.send('GET', `/v2/templates/${validId(id, 'template')}`, { notFoundIsNull: true });
    return r === null ? null : this.parse(r.body, templateSchema, `GET /v2/templates/${id}`);
  }

  // ---- environments ------------------------------------------------------------------------

  /** Every environment, walking every page (project-scoped when a Project ID is set). */
  listEnvironments(): Promise<Environment[]> {
    return this.walk(this.collectionPath('configurations'), environmentList);
  }

  async getEnvironment(id: string): Promise<Environment | null> {
    const path = `/v2/configurations/${validId(id, 'environment')}`;
    const r = await this.send('GET', path, { notFoundIsNull: true });
    return r === null ? null : this.parse(r.body, environmentSchema, `GET ${path}`);
  }

  /**
   * Creates an environment from a template. Sent at most once per call: a 423/429/422-busy reply
   * (Skytap refused it, so nothing was created) is retried; a 5xx, timeout or unreadable reply is
   * not — the error then carries detail.maybeCreated. Scoped to the project when one is set.
   * Skytap does not start the VMs; call setRunstate(id, 'running') once it is no longer busy.
   */
  async createEnvironment(req: { templateId: string; name: string }): Promise<Environment> {
    if (typeof req.name !== 'string' || req.name.trim() === '' || req.name.length > 255) {
      throw new AppError('invalid_request', "An environment name must be 1 to 255 characters (Skytap's limit).");
    }
    const body: Record<string, unknown> = { template_id: validId(req.templateId, 'template'), name: req.name };
    // UNCONFIRMED: project_id in the create body (the Go SDK's CreateEnvironmentRequest has it) so
    // the project-scoped listing sees the new environment. See docs/skytap.md.
    if (this.projectId !== null) body.project_id = /^\d+$/.test(this.projectId) ? Number(this.projectId) : this.projectId;
    const r = await this.sendOk('POST', '/configurations.json', { body, isCreate: true });
    return this.parse(r.body, environmentSchema, 'POST /configurations.json', true);
  }

  /** Asks for a runstate. A 200 only means accepted: poll getEnvironment until it is reached. */
  async setRunstate(id: string, runstate: 'running' | 'suspended' | 'stopped' | 'halted'): Promise<Environment> {
    const path = `/configurations/${validId(id, 'environment')}.json`;
    const r = await this.sendOk('PUT', path, { body: { runstate }, what: `environment ${id}` });
    return this.parse(r.body, environmentSchema, `PUT ${path}`);
  }

  /**
   * Deletes an environment. 'deleted' means Skytap accepted the delete, which completes
   * asynchronously: it is done when getEnvironment answers null (404). 404 here → 'already_gone'.
   */
  async deleteEnvironment(id: string): Promise<'deleted' | 'already_gone'> {
    const path = `/configurations/${validId(id, 'environment')}.json`;
    const r = await this.send('DELETE', path, { notFoundIsNull: true });
    return r === null ? 'already_gone' : 'deleted';
  }

  // ---- VMs ---------------------------------------------------------------------------------

  listVms(envId: string): Promise<Vm[]> {
    return this.walk(`/v2/configurations/${validId(envId, 'environment')}/vms`, vmList, `environment ${envId}`);
  }

  async getVmUserData(envId: string, vmId: string): Promise<string> {
    const path = `/v2/configurations/${validId(envId, 'environment')}/vms/${validId(vmId, 'VM')}/user_data.json`;
    const r = await this.sendOk('GET', path, { what: `VM ${vmId} in environment ${envId}` });
    return this.parse(r.body, userDataSchema, `GET ${path}`).contents;
  }

  async setVmUserData(envId: string, vmId: string, contents: string): Promise<void> {
    if (contents.length > USER_DATA_MAX) {
      throw new AppError(
        'invalid_request',
        `The user_data is ${contents.length} characters; Skytap accepts at most ${USER_DATA_MAX}. Shorten the payload.`,
      );
    }
    const path = `/v2/configurations/${validId(envId, 'environment')}/vms/${validId(vmId, 'VM')}/user_data.json`;
    await this.sendOk('PUT', path, { body: { contents }, what: `VM ${vmId} in environment ${envId}` });
  }

  /** Walks a collection to the total it reports (share-api.ts walks its collections through it). */
  walk<T>(path: string, schema: z.ZodType<T[]>, what?: string): Promise<T[]> {
    return walkPages(this, path, schema, what);
  }

  /**
   * UNCONFIRMED against a live account: that /v2/projects/{id}/templates and /configurations
   * return the account-wide shapes, honour count/offset, and answer 404 for a project the token
   * cannot see. This is the one place the project paths are built (docs/skytap.md).
   */
  private collectionPath(kind: 'templates' | 'configurations'): string {
    return this.projectId !== null ? `/v2/projects/${this.projectId}/${kind}` : `/v2/${kind}`;
  }
}
