/**
 * The REST API: giantswarm/vm-manager's /api/v1 (api/openapi.yaml @ dc39fe35; the schemas are in
 * main/vm-api/schemas.ts): snake_case request bodies with unknown fields refused, camelCase records
 * (views.ts), errors as {"error":{"code","message"}} with the document's codes, a bearer token on
 * every request. Beyond the document, this daemon keeps its image store routes (import, delete,
 * golden values) and a `povdesk` object on records for what only it knows.
 *
 * This file is the route table and the dispatch in front of it (Host check, /healthz, token);
 * the handlers are per resource: api-vms.ts, api-images.ts, api-networks.ts; what they share
 * (bodies, answers, the guards) is api-http.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, hostRefusal, matchPath, send, tokenOk, type ApiContext, type Handler } from './api-http';
import { imageHandlers } from './api-images';
import { networkHandlers } from './api-networks';
import { vmHandlers } from './api-vms';
import { STATUS, type VmmCode } from './errors';
import { openApiDocument } from './openapi';
import { hostView } from './views';

/** One route: method, path under /api/v1 with `{param}` segments, operationId, handler. */
type Route = [method: string, path: string, operationId: string, handle: Handler];

/**
 * The routes under /api/v1, in the document's order: giantswarm's by their operationId, then
 * this daemon's own (no operationId in the document; named here in the same style). A path's
 * `{x}` matches one segment, decoded; `{id}` must look like a VM id.
 */
function routeTable(ctx: ApiContext): Route[] {
  const vm = vmHandlers(ctx);
  const image = imageHandlers(ctx);
  const network = networkHandlers(ctx);
  return [
    ['GET', '/host', 'getHost', async (a) => send(a.res, 200, hostView(await ctx.host()))],
    ['GET', '/images', 'listImages', image.list],
    ['GET', '/images/{ref}', 'getImage', image.get],
    ['GET', '/networks', 'listNetworks', network.list],
    ['POST', '/networks', 'createNetwork', network.create],
    ['GET', '/networks/{name}', 'getNetwork', network.get],
    ['DELETE', '/networks/{name}', 'deleteNetwork', network.delete],
    ['GET', '/vms', 'listVMs', vm.list],
    ['POST', '/vms', 'createVM', vm.create],
    ['GET', '/vms/{id}', 'getVM', vm.get],
    ['DELETE', '/vms/{id}', 'deleteVM', vm.delete],
    ['POST', '/vms/{id}/start', 'startVM', vm.start],
    ['POST', '/vms/{id}/stop', 'stopVM', vm.stop],
    ['POST', '/vms/{id}/reboot', 'rebootVM', vm.reboot],
    ['POST', '/vms/{id}/exec', 'execVM', vm.exec],
    ['POST', '/vms/{id}/forward', 'forwardPort', vm.forward],
    ['GET', '/vms/{id}/console', 'getVMConsole', vm.console],
    ['GET', '/vms/{id}/attestation', 'getVMAttestation', vm.attestation],
    ['GET', '/vms/{id}/metrics', 'getVMMetrics', vm.metrics],
    ['GET', '/vms/{id}/report', 'getVMReport', vm.report],
    ['GET', '/openapi.yaml', 'getOpenAPI', (a) => send(a.res, 200, openApiDocument(), 'application/yaml')],

    // Beyond the document: the guest half of attestation, for an image builder.
    ['GET', '/povdesk/attest-agent', 'povdeskAttestAgent', image.attestAgent],
    // Beyond the document: the local image store.
    ['POST', '/images', 'povdeskImportImage', image.import],
    ['DELETE', '/images/{ref}', 'povdeskDeleteImage', image.delete],
    ['POST', '/images/{ref}/learn-golden', 'povdeskLearnGolden', image.learnGolden],
    ['POST', '/images/{ref}/references', 'povdeskRemakeReferences', image.remakeReferences],
    ['PUT', '/images/{ref}/golden', 'povdeskSaveGolden', image.saveGolden],
    // Beyond the document: a network's Internet access, a VM's clean state and user-data.
    ['PUT', '/networks/{name}/povdesk/internet', 'povdeskSetInternet', network.setInternet],
    ['POST', '/vms/{id}/povdesk/save-clean', 'povdeskSaveClean', vm.saveClean],
    ['POST', '/vms/{id}/povdesk/reset-clean', 'povdeskResetClean', vm.resetClean],
    ['PUT', '/vms/{id}/povdesk/user-data', 'povdeskSetUserData', vm.setUserData],
  ];
}

export function createApiHandler(ctx: ApiContext) {
  const routes = routeTable(ctx);

  const route = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://local');
    const path = url.pathname;
    const m = req.method ?? 'GET';
    const wrongHost = hostRefusal(req, ctx.allowedHost?.() ?? null);
    if (wrongHost) return fail(res, 'forbidden', wrongHost);
    if (path === '/healthz') return send(res, 200, { ok: true });
    if (!path.startsWith('/api/v1/') && path !== '/api/v1')
      return fail(res, 'not_found', `no route ${m} ${path}; the API lives under /api/v1`);
    if (!tokenOk(req.headers.authorization, ctx.token))
      return fail(
        res,
        'unauthorized',
        'missing or wrong bearer token: send "Authorization: Bearer <token>" (printed by `povdesk vm-manager serve`)',
      );
    const seg = path
      .slice('/api/v1'.length)
      .split('/')
      .filter(Boolean)
      .map((x) => decodeURIComponent(x));
    for (const [method, template, , handle] of routes) {
      if (method !== m) continue;
      const params = matchPath(template, seg);
      if (!params) continue;
      if (params.id !== undefined && !/^[0-9a-f]{8}$/.test(params.id))
        return fail(res, 'not_found', `no VM with id "${params.id}" (ids are 8 hex characters)`);
      return handle({ req, res, url, params });
    }
    return fail(res, 'not_found', `no route ${m} ${path}`);
  };

  return (req: IncomingMessage, res: ServerResponse) => {
    route(req, res).catch((e: unknown) => {
      const code = (e as { code?: string }).code;
      const known = typeof code === 'string' && code in STATUS;
      if (!res.headersSent) fail(res, known ? (code as VmmCode) : 'internal', e instanceof Error ? e.message : String(e));
      else res.end();
    });
  };
}
