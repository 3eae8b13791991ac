/**
 * The REST API's /networks routes (the route table is in api.ts) over Networks (networks.ts), and
 * this daemon's own switch for a network's Internet access.
 */
import { setInternetSchema } from '../vm-api/povdesk';
import { createNetworkRequestSchema } from '../vm-api/schemas';
import { parseBody, readJson, send, type ApiContext, type Handler } from './api-http';
import { networkView } from './views';

/** The handlers of the /networks routes, by the operation each answers. */
export function networkHandlers(ctx: ApiContext) {
  const vms = () => ctx.vms.list();
  return {
    list: (a) =>
      send(
        a.res,
        200,
        ctx.networks.list().map((n) => networkView(n, vms())),
      ),
    create: async (a) => {
      const b = parseBody(createNetworkRequestSchema, await readJson(a.req, true));
      return send(
        a.res,
        201,
        networkView(ctx.networks.create({ name: b.name, cidr: b.cidr, dnsSearchDomain: b.dns_search_domain }), vms()),
      );
    },
    get: (a) => send(a.res, 200, networkView(ctx.networks.get(a.params.name!), vms())),
    delete: (a) => {
      const name = a.params.name!;
      ctx.networks.get(name);
      ctx.networks.delete(
        name,
        vms()
          .filter((v) => v.network === name)
          .map((v) => v.id),
      );
      return send(a.res, 204);
    },
    // The POV's "Internet access"; each VM follows it at its next start.
    setInternet: async (a) => {
      const b = parseBody(setInternetSchema, await readJson(a.req, true));
      return send(a.res, 200, networkView(ctx.networks.setInternet(a.params.name!, b.internet), vms()));
    },
  } satisfies Record<string, Handler>;
}
