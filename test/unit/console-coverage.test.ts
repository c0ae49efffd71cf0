// Every write route for an app's configuration has a console action (issue 32, item 1): the route table's writes
// under /apps/:appId or /console/api that a key, the admin key or a person's session may call, each either called
// from console/src (its SDK method, `.webhooks.update(`, or its path through consoleApi / adminApi) or listed below
// as API-only with the reason.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { routes } from '../../src/routes.js';

/** Writes that are not configuration: the runtime a product's backend, its pages or an agent drives. */
const API_ONLY: Record<string, string> = {
  'usage.add': 'runtime: a product records usage as its customers use it',
  'creditPacks.checkout': 'runtime: a buyer buys a credit pack (a 402, the components, create_topup_link)',
  'creditPacks.complete': 'runtime: the buyer returns from PayPal after approving a credit pack order',
  'entities.create': 'runtime: the product registers a member (user, workspace) when its customer adds one',
  'entities.delete': 'runtime: the product deletes a member when its customer removes one',
  'usage.remove': 'runtime: usage given back by the product',
  'usage.addAmount': 'runtime: metered amounts recorded by the product',
  'usage.ingest': 'runtime: batched usage events from the product',
  'reservations.create': 'runtime: a product reserves usage before long work',
  'reservations.commit': 'runtime: the reservation settled by the product',
  'reservations.release': 'runtime: the reservation given back by the product',
  'offers.checkout': 'runtime: a buyer starts a checkout from the pricing page (the components)',
  'plans.checkout': 'runtime: a buyer starts a checkout for a plan (the components)',
  'checkouts.complete': 'runtime: the buyer returns from the provider (the components)',
  'cancelSessions.start': 'runtime: a customer starts a cancel flow (the components)',
  'cancelSessions.answer': 'runtime: a customer answers a cancel-flow step',
  'cancelSessions.back': 'runtime: a customer steps back in a cancel flow',
  'cancelSessions.decline': 'runtime: a customer declines a retention offer',
  'cancelSessions.accept': 'runtime: a customer accepts a retention offer',
  'cancelSessions.cancel': 'runtime: a customer confirms the cancellation',
  'cancelSessions.close': 'runtime: a customer leaves the cancel flow',
  'subscriptions.sync': "runtime: the product re-reads one customer's subscription at the provider",
  'accounts.create': 'runtime: the product creates an account when its customer signs up',
  'accounts.update': "runtime: the product keeps an account's plan and metadata in step with its own records",
  'accounts.delete': 'runtime: the product deletes an account with its customer',
  'accounts.createToken': "runtime: the product's backend mints a token for its customer's browser",
  'accounts.grantAddon': 'runtime: the product grants an add-on to one customer',
  'accounts.revokeAddon': "runtime: the product revokes one customer's add-on",
  'accounts.removeIncentive': "runtime: the product ends one customer's incentive",
  'accounts.upgradeLink': "runtime: the product's backend asks for one customer's upgrade link",
  'mcp.post': 'the MCP transport itself (JSON-RPC from MCP clients)',
  'imports.create': 'a one-off bulk migration with the admin key (a file upload of another system’s export)',
  'agentThreads.put': "the in-product agent's conversation store, written by the agent's client",
  'agentThreads.rename': "the in-product agent's conversation store, written by the agent's client",
  'agentThreads.delete': "the in-product agent's conversation store, written by the agent's client",
  'offers.preview':
    'a read sent as POST (a buyer-side preview of a saved offer with a body); the editor previews with previewDraft',
  'console.invitationLink':
    "the operator's own terminal, with the admin key, where no email is sent: never a person's browser",
  'plans.mergeMeta': "integrators' free-form metadata merge; the plan editor saves `meta` whole through plans.update",
};

const CONFIG_CREDS = new Set(['S', 'C', 'A']);
const VERBS: Record<string, string> = { POST: 'post', PATCH: 'patch', DELETE: 'del', PUT: 'put' };

/** The console's source, every .ts/.tsx file under console/src, as one text. */
function consoleSource(): string {
  const root = path.resolve('console/src');
  return (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((f) => /\.tsx?$/.test(f))
    .map((f) => fs.readFileSync(path.join(root, f), 'utf8'))
    .join('\n');
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A route path as the console spells it in a string or template: each `:param` any `${...}` or literal segment. */
function pathPattern(p: string): string {
  return p
    .split('/')
    .map((seg) => (seg.startsWith(':') ? String.raw`(?:\$\{[^}]*\}|[^/\`'"]+)` : escape(seg)))
    .join('/');
}

/** Whether console/src calls the route: its SDK method, or its path through consoleApi (or adminApi for an app). */
function hasAction(src: string, r: { method: string; path: string; sdk?: string }): boolean {
  if (r.sdk && new RegExp(String.raw`\.${escape(r.sdk)}\(`).test(src)) return true;
  const verb = VERBS[r.method];
  const call = (client: string, p: string) =>
    new RegExp(String.raw`${client}\s*\.\s*${verb}\s*(?:<[^(]*>)?\(\s*[\`'"]${pathPattern(p)}[\`'"]`).test(src);
  if (r.path.startsWith('/console/api/')) return call('consoleApi', r.path.slice('/console/api'.length));
  return call(String.raw`adminApi\([^)]*\)`, r.path.slice('/apps/:appId'.length));
}

describe('every write route for app configuration has a console action', () => {
  const src = consoleSource();
  const writes = routes.filter(
    (r) =>
      r.method !== 'GET' &&
      (r.path === '/apps/:appId' || r.path.startsWith('/apps/:appId/') || r.path.startsWith('/console/api/')) &&
      r.auth.some((c) => CONFIG_CREDS.has(c)),
  );
  const name = (r: (typeof writes)[number]) => r.sdk ?? `${r.method} ${r.path}`;

  it('finds the write routes it checks (the filter is not empty by accident)', () => {
    expect(writes.length).to.be.greaterThan(40);
    expect(writes.map(name)).to.include.members(['webhooks.update', 'payments.connect', 'mcp.updateSettings']);
  });

  it('each one is called from console/src, or is API-only with a reason', () => {
    const missing = writes
      .filter((r) => !API_ONLY[name(r)] && !hasAction(src, r))
      .map((r) => `${r.method} ${r.path} (${name(r)})`);
    expect(missing, `write routes with no console action:\n${missing.join('\n')}`).to.deep.equal([]);
  });

  it('the API-only list holds only routes that exist, each with a reason, none of them called from the console', () => {
    const names = new Set(writes.map(name));
    for (const [route, reason] of Object.entries(API_ONLY)) {
      expect(names.has(route), `API_ONLY names ${route}, which is not a write route here`).to.equal(true);
      expect(reason.length, route).to.be.greaterThan(10);
    }
    const coveredAnyway = writes.filter((r) => API_ONLY[name(r)] && hasAction(src, r)).map(name);
    expect(coveredAnyway, 'called from the console: not API-only').to.deep.equal([]);
  });

  it('recognises a console action by SDK method or by path, and not a lookalike', () => {
    const patch = { method: 'PATCH', path: '/apps/:appId/mcp/settings' };
    expect(hasAction("await adminApi(appId!).patch('/mcp/settings', { enabled })", patch)).to.equal(true);
    expect(hasAction("await adminApi(appId!).get('/mcp/settings')", patch)).to.equal(false);
    const del = { method: 'DELETE', path: '/console/api/workspaces/:workspaceId/members/:userId' };
    expect(hasAction('consoleApi.del(`/workspaces/${ws}/members/${encodeURIComponent(id)}`)', del)).to.equal(true);
    expect(hasAction('consoleApi.del(`/workspaces/${ws}/invitations/${id}`)', del)).to.equal(false);
    const sdk = { method: 'PATCH', path: '/apps/:appId/webhooks/:webhookId', sdk: 'webhooks.update' };
    expect(hasAction('api.webhooks.update(id, body)', sdk)).to.equal(true);
    expect(hasAction('api.webhooks.updated(id, body)', sdk)).to.equal(false);
  });
});
