import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connectProvider, createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, del, get, patch, post } from '../helpers/http.js';
import { ALL_TOOLSETS, connectMcp, mcpPost, resultJson, resultText } from '../helpers/mcp.js';
import { startReceiver } from '../helpers/receiver.js';
import { KEY_SESSIONS_PER_APP } from '../../src/mcp/connections.js';
import { testEnv } from '../helpers/servers.js';

const TOOLS: Record<string, 'R' | 'W' | 'F'> = {
  list_accounts: 'R',
  count_accounts: 'R',
  list_accounts_with_incentive: 'R',
  create_account: 'W',
  get_account: 'R',
  update_account: 'W',
  delete_account: 'F',
  remove_account_incentive: 'F',
  get_account_access: 'R',
  get_account_access_private: 'R',
  get_account_usage: 'R',
  get_usage_count: 'R',
  increment_usage: 'W',
  decrement_usage: 'W',
  add_usage_amount: 'W',
  create_upgrade_link: 'W',
  create_topup_link: 'W',
  get_offer: 'R',
  list_plans: 'R',
  create_plan: 'W',
  get_plan: 'R',
  update_plan: 'W',
  delete_plan: 'F',
  merge_plan_meta: 'W',
  list_plan_accounts: 'R',
  attach_plan_entitlement: 'W',
  set_plan_entitlement_limit: 'W',
  detach_plan_entitlement: 'F',
  attach_plan_addon: 'W',
  detach_plan_addon: 'F',
  list_pricing_cards: 'R',
  get_pricing_card: 'R',
  list_entitlements: 'R',
  create_entitlement: 'W',
  get_entitlement: 'R',
  update_entitlement: 'W',
  delete_entitlement: 'F',
  list_addons: 'R',
  create_addon: 'W',
  get_addon: 'R',
  update_addon: 'W',
  delete_addon: 'F',
  list_incentives: 'R',
  create_incentive: 'W',
  get_incentive: 'R',
  update_incentive: 'W',
  delete_incentive: 'F',
  attach_incentive_entitlement: 'W',
  set_incentive_entitlement_limit: 'W',
  detach_incentive_entitlement: 'F',
  attach_incentive_addon: 'W',
  detach_incentive_addon: 'F',
  get_usage_summary: 'R',
  top_accounts_by_usage: 'R',
  get_usage_timeseries: 'R',
  list_usage_events: 'R',
  list_webhooks: 'R',
  create_webhook: 'W',
  get_webhook: 'R',
  update_webhook: 'W',
  delete_webhook: 'F',
  send_test_event: 'W',
  list_webhook_deliveries: 'R',
  retry_webhook_delivery: 'W',
  list_events: 'R',
  get_app: 'R',
  update_app: 'W',
  // Issue 30: plan changes are the one subscription write an agent may start (the buyer approves at PayPal).
  change_subscription: 'W',
  quote_subscription_change: 'R',
  get_account_timeline: 'R',
  get_credit_balance: 'R',
  grant_credits: 'W',
  list_entities: 'R',
  create_entity: 'W',
  delete_entity: 'F',
};

const rpc = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});
const init = (protocolVersion: string, name = 'raw-client') =>
  rpc('initialize', { protocolVersion, capabilities: {}, clientInfo: { name, version: '1' } });
const raw = (app: TestApp, body: unknown, token: string | null = app.api_key, headers: Record<string, string> = {}) =>
  mcpPost(app.id, body, token, headers);

describe('MCP server', function () {
  this.timeout(60_000);
  let app: TestApp;
  const clients: Client[] = [];
  const connect = async (key = app.api_key, name?: string, headers?: Record<string, string>) => {
    const c = await connectMcp(app.id, { key, headers }, name);
    clients.push(c.client);
    return c;
  };
  beforeEach(async () => {
    ({ app } = await seededApp());
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  describe('POST /apps/:appId/mcp transport', () => {
    it('answers initialize with the version asked for (each of the four) or the newest, with capabilities and instructions', async () => {
      for (const v of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
        const res = await raw(app, init(v));
        expect(res.status, res.text).to.equal(200);
        expect(res.headers.get('content-type')).to.match(/application\/json/);
        expect(res.body.result.protocolVersion).to.equal(v);
        expect(res.body.result.capabilities).to.include.keys('tools', 'resources', 'prompts');
        expect(res.body.result.instructions)
          .to.match(/catalog/)
          .and.match(/confirm/);
        expect(res.body.result.serverInfo.name).to.equal('offerkit');
      }
      const newest = await raw(app, init('1999-01-01'));
      expect(newest.body.result.protocolVersion).to.equal('2025-11-25');
    });

    it('takes batches, answers notifications with an empty 202, and 405 for GET and DELETE', async () => {
      const batch = await raw(
        app,
        [rpc('tools/list', {}, 1), rpc('prompts/list', {}, 2), { jsonrpc: '2.0', method: 'notifications/initialized' }],
        app.api_key,
        ALL_TOOLSETS,
      );
      expect(batch.status, batch.text).to.equal(200);
      expect(batch.body).to.be.an('array').with.length(2);
      expect(batch.body.find((r: { id: number }) => r.id === 1).result.tools).to.have.length(75 + 2);
      const note = await raw(app, { jsonrpc: '2.0', method: 'notifications/initialized' });
      expect(note.status).to.equal(202);
      expect(note.text).to.equal('');
      for (const method of ['GET', 'DELETE']) {
        const res = await call(method, `/apps/${app.id}/mcp`, { token: app.api_key });
        expect(res.status).to.equal(405);
        expect(res.body.error).to.match(/Method not allowed/);
      }
    });

    it(
      '401 with the resource metadata pointer for no credential, the publishable key and account ' +
        'tokens; 400 for a body that is not JSON-RPC',
      async () => {
        await createAccount(app, { id: 'alice' });
        const token = (await post(`/apps/${app.id}/namespaces/alice/token`, app.api_key, {})).body.token;
        for (const cred of [null, app.public_key, token, 'mcp_at_nope', 'key_wrong']) {
          const res = await raw(app, rpc('tools/list'), cred);
          expect(res.status, String(cred)).to.equal(401);
          expect(res.body).to.deep.equal({ error: 'Unauthorized' });
          // `scope` is the app's cap (Read and write for a new app), so a client asks for no more.
          const pointer =
            `Bearer resource_metadata="${testEnv().baseUrl}/.well-known/oauth-protected-resource/apps/${app.id}/mcp", ` +
            'scope="mcp:write"';
          expect(res.headers.get('www-authenticate')).to.equal(
            cred === null ? pointer : `${pointer}, error="invalid_token"`,
          );
        }
        // Anything else the endpoint refuses is a JSON-RPC error (test/api/mcp-spec-names.test.ts).
        const bad = await raw(app, { hello: 'world' });
        expect(bad.status).to.equal(400);
        expect(bad.body.error.code).to.equal(-32600);
        expect(bad.body.error.message).to.match(/^body/);
        const unsupported = await raw(app, rpc('tools/list'), app.api_key, { 'Mcp-Protocol-Version': '1999-01-01' });
        expect(unsupported.status).to.equal(400);
      },
    );

    it('403 for every credential while the server is turned off; on again restores it', async () => {
      const off = await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { enabled: false });
      expect(off.status, off.text).to.equal(200);
      expect(off.body.enabled).to.equal(false);
      for (const cred of [app.api_key, testEnv().adminKey]) {
        const res = await raw(app, rpc('tools/list'), cred);
        expect(res.status).to.equal(403);
        expect(res.body.error.message).to.match(/turned off/);
      }
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { enabled: true });
      expect((await raw(app, rpc('tools/list'))).status).to.equal(200);
    });
  });

  describe('tools', () => {
    // The 64 of the spec, create_upgrade_link, change_subscription, quote_subscription_change, get_account_timeline,
    // get_offer, the credits tools get_credit_balance, grant_credits and create_topup_link, and the entities tools
    // list_entities, create_entity and delete_entity.
    it('lists the 75 tools (every toolset), levels, schemas', async () => {
      const { client } = await connect(app.api_key, undefined, ALL_TOOLSETS);
      const { tools: listed } = await client.listTools();
      // With the two discovery tools (test/api/mcp-toolsets.test.ts).
      expect(listed.slice(0, 2).map((t) => t.name)).to.deep.equal(['find_tools', 'call_tool']);
      const tools = listed.slice(2);
      expect(tools).to.have.length(75);
      expect(tools.map((t) => t.name).sort()).to.deep.equal(Object.keys(TOOLS).sort());
      for (const t of tools) {
        const level = TOOLS[t.name];
        // MCP's defaults (readOnlyHint false, destructiveHint true) apply to hints left out.
        expect(t.annotations?.readOnlyHint ?? false, t.name).to.equal(level === 'R');
        if (level !== 'R') expect(t.annotations?.destructiveHint ?? true, t.name).to.equal(level === 'F');
        expect(t.annotations?.openWorldHint, t.name).to.equal(
          t.name === 'send_test_event' || t.name === 'retry_webhook_delivery' || t.name === 'change_subscription',
        );
        expect(t.inputSchema.type).to.equal('object');
        expect(t.outputSchema?.type, t.name).to.equal('object');
        expect(t.inputSchema.properties ?? {}, t.name).to.not.have.property('appId');
      }
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      expect(byName.get_account.inputSchema.required).to.deep.equal(['namespaceId']);
      expect(byName.add_usage_amount.inputSchema.required).to.include.members([
        'namespaceId',
        'entitlementId',
        'amount',
      ]);
      expect(byName.list_accounts.inputSchema.properties).to.include.keys('q', 'plan', 'incentive', 'page', 'per_page');
      // Filters left out: `offer`, and `has_incentive` (list_accounts_with_incentive is that tool).
      expect(byName.list_accounts.inputSchema.properties).to.not.have.property('offer');
      expect(byName.list_accounts.inputSchema.properties).to.not.have.property('has_incentive');
      // Every write tool also takes the shared `dry_run` (test/mcp-guardrails.test.ts).
      expect(Object.keys(byName.update_app.inputSchema.properties ?? {})).to.deep.equal(['name', 'dry_run']);
      expect(byName.merge_plan_meta.inputSchema.required).to.include.members(['planId', 'meta']);
      expect(byName.create_plan.inputSchema.required).to.include.members(['id', 'name']);
    });

    it('a call per group returns the route JSON as text; errors are isError with "Error <status>: <message>"', async () => {
      const { client } = await connect();
      const tool = async (name: string, args: Record<string, unknown> = {}) => {
        const r = await client.callTool({ name, arguments: args });
        expect(r.isError, `${name}: ${resultText(r)}`).to.equal(false);
        return resultJson(r);
      };
      // Accounts and usage
      expect((await tool('create_account', { namespaceId: 'alice', plan: 'pro' })).plan).to.equal('pro');
      expect((await tool('count_accounts')).count).to.equal(1);
      expect((await tool('increment_usage', { namespaceId: 'alice', entitlementId: 'api_calls' })).count).to.equal(1);
      expect(
        (await tool('add_usage_amount', { namespaceId: 'alice', entitlementId: 'api_calls', amount: 4 })).count,
      ).to.equal(5);
      const access = await tool('get_account_access', { namespaceId: 'alice' });
      expect(JSON.stringify(access)).to.include('api_calls');
      expect(
        (await tool('list_accounts', { q: 'ali', per_page: 5 })).data.map((a: { id: string }) => a.id),
      ).to.deep.equal(['alice']);
      // Plans, meta under `meta`
      expect((await tool('merge_plan_meta', { planId: 'pro', meta: { badge: 'popular' } })).meta).to.include({
        badge: 'popular',
        color: 'blue',
      });
      expect((await tool('list_plans')).map((p: { id: string }) => p.id)).to.include.members(['free', 'pro', 'scale']);
      // Beside the text, the same JSON as structuredContent (a list under `data`, as MCP wants an object).
      const plans = await client.callTool({ name: 'list_plans', arguments: {} });
      expect(plans.structuredContent).to.deep.equal({ data: resultJson(plans) });
      const acct = await client.callTool({ name: 'get_account', arguments: { namespaceId: 'alice' } });
      expect(acct.structuredContent).to.deep.equal(resultJson(acct));
      expect((await tool('get_pricing_card', { planId: 'pro' })).monthlyPrice).to.equal(29);
      // Entitlements, add-ons, incentives
      expect((await tool('create_entitlement', { id: 'exports', type: 'usage', name: 'Exports' })).id).to.equal(
        'exports',
      );
      expect((await tool('get_addon', { addonId: 'priority' })).name).to.equal('Priority support');
      expect((await tool('create_incentive', { id: 'launch', name: 'Launch' })).id).to.equal('launch');
      expect(
        (await tool('attach_incentive_entitlement', { incentiveId: 'launch', entitlementId: 'api_calls', max: 5000 }))
          .id,
      ).to.equal('launch');
      // Analytics
      const summary = await tool('get_usage_summary', { interval: '7d' });
      expect(summary.entitlements.find((e: { id: string }) => e.id === 'api_calls').amount).to.equal(5);
      // App: keys redacted, only the name changes
      const got = await tool('get_app');
      expect(got).to.include({ id: app.id, api_key: '[redacted]', public_key: '[redacted]' });
      const renamed = await tool('update_app', { name: 'Renamed' });
      expect(renamed).to.include({ name: 'Renamed', api_key: '[redacted]', checkout_url: null });
      const other = await client.callTool({
        name: 'update_app',
        arguments: { checkout_url: 'https://evil.example/x' },
      });
      expect(resultText(other)).to.match(/^Error 400: Unknown argument `checkout_url`: update_app takes `name`/);
      // Deletes
      expect((await tool('delete_entitlement', { entitlementId: 'exports' })).id).to.equal('exports');
      expect(
        resultText(await client.callTool({ name: 'get_entitlement', arguments: { entitlementId: 'exports' } })),
      ).to.equal('Error 404: Entitlement exports not found');
      // Errors
      const missing = await client.callTool({ name: 'get_plan', arguments: { planId: 'nope' } });
      expect(missing.isError).to.equal(true);
      expect(resultText(missing)).to.equal('Error 404: Plan nope not found');
      const invalid = await client.callTool({ name: 'create_plan', arguments: { name: 'No id' } });
      expect(invalid.isError).to.equal(true);
      expect(resultText(invalid)).to.match(/^Error 400: id: /);
      const limit = await client.callTool({ name: 'top_accounts_by_usage', arguments: { interval: '7d', limit: 500 } });
      expect(resultText(limit)).to.match(/^Error 400: limit/);
      // A tool the server does not have is a JSON-RPC error (-32602), not a result.
      const unknown = await client.callTool({ name: 'delete_app', arguments: {} }).catch((e: { code: number }) => e);
      expect(unknown).to.include({ code: -32602 });
    });

    it('a 402 keeps "Error 402: <message>" naming the upgrade and its link; structuredContent carries the whole body', async () => {
      await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://shop.example/pricing' });
      await createAccount(app, { id: 'f1', plan: 'free' });
      const { client } = await connect();
      // The SDK client checks structuredContent against each tool's outputSchema (the 402 body is admitted).
      const ok = await client.callTool({
        name: 'increment_usage',
        arguments: { namespaceId: 'f1', entitlementId: 'seats' },
      });
      expect(ok.structuredContent).to.deep.equal({ entitlement: 'seats', count: 1 });
      const r = await client.callTool({
        name: 'increment_usage',
        arguments: { namespaceId: 'f1', entitlementId: 'seats' },
      });
      expect(r.isError).to.equal(true);
      const link = 'https://shop.example/pricing?plan=pro&interval=month&account=f1';
      expect(resultText(r)).to.equal(
        `Error 402: Seats: 1 of 1 used. Upgrade to Pro ($29.00/month) for 5 Seats: ${link}`,
      );
      const rest = await post(`/apps/${app.id}/namespaces/f1/usage/seats/add`, app.api_key);
      expect(rest.status).to.equal(402);
      // The route's 402 body, with the status as every tool error's structured content has it.
      expect(r.structuredContent).to.deep.equal({ ...rest.body, status: 402 });
      expect((r.structuredContent as { offer: { checkout_url: string } }).offer.checkout_url).to.equal(link);
      const amount = await client.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'f1', entitlementId: 'seats', amount: 3 },
      });
      expect((amount.structuredContent as { error: string }).error).to.equal('limit_reached');
    });

    it('create_upgrade_link: the pricing page, else a provider approval link reused for an hour', async () => {
      await createAccount(app, { id: 'f1', plan: 'free' });
      const { client } = await connect();
      const noProvider = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'pro' },
      });
      expect(noProvider.isError).to.equal(true);
      expect(resultText(noProvider)).to.match(/^Error 409: /);
      await connectProvider(app);
      const first = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'pro', interval: 'year' },
      });
      expect(first.isError, resultText(first)).to.equal(false);
      expect(first.structuredContent).to.include({
        account: 'f1',
        interval: 'year',
        currency: 'USD',
        price: 290,
        kind: 'provider_approval',
      });
      expect((first.structuredContent as { url: string }).url).to.match(/\/checkoutnow\?ba_token=BA-/);
      const again = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'pro', interval: 'year' },
      });
      expect((again.structuredContent as { url: string }).url, 'reused').to.equal(
        (first.structuredContent as { url: string }).url,
      );
      expect((await get(`/apps/${app.id}/checkouts`, app.api_key)).body.data).to.have.length(1);
      await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://shop.example/pricing' });
      const page = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'scale' },
      });
      expect(page.structuredContent).to.include({
        kind: 'pricing_page',
        url: 'https://shop.example/pricing?plan=scale&interval=month&account=f1',
        price: 99,
      });
      const missing = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'nobody', plan: 'pro' },
      });
      expect(resultText(missing)).to.equal('Error 404: Account nobody not found');
      const noPrice = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'internal' },
      });
      expect(resultText(noPrice)).to.match(/^Error 409: Plan internal has no yearly price/);
    });

    it('webhook tools redact signing secrets; send_test_event and retry_webhook_delivery reach the endpoint', async () => {
      const receiver = await startReceiver();
      try {
        const { client } = await connect();
        const created = resultJson(
          await client.callTool({ name: 'create_webhook', arguments: { url: receiver.url, events: ['*'] } }),
        );
        expect(created.secret).to.equal('[redacted]');
        expect(
          resultText(await client.callTool({ name: 'get_webhook', arguments: { webhookId: created.id } })),
        ).to.not.match(/whsec_/);
        const sent = resultJson(
          await client.callTool({ name: 'send_test_event', arguments: { webhookId: created.id } }),
        );
        expect(sent.status).to.equal('succeeded');
        const retried = resultJson(
          await client.callTool({
            name: 'retry_webhook_delivery',
            arguments: { webhookId: created.id, deliveryId: sent.id },
          }),
        );
        expect(retried.attempts).to.be.greaterThan(1);
        const real = await get(`/apps/${app.id}/webhooks/${created.id}`, app.api_key);
        expect(real.body.secret).to.match(/^whsec_/);
      } finally {
        await receiver.close();
      }
    });
  });

  describe('resources and prompts', () => {
    it('lists the four resources and the account template, and reads them (keys redacted)', async () => {
      await createAccount(app, { id: 'bob', plan: 'pro' });
      const { client } = await connect();
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri).sort()).to.deep.equal([
        'offer://app',
        'offer://catalog',
        'offer://events',
        'offer://pricing',
        // The MCP App pages (issue 33, item 6; issue 43, item 4; test/browser/mcp-apps.test.ts).
        'ui://offerkit/account-balance',
        'ui://offerkit/paywall',
        'ui://offerkit/pricing-table',
        'ui://offerkit/usage-meter',
      ]);
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).to.deep.equal(['offer://accounts/{namespaceId}']);
      const read = async (uri: string) =>
        JSON.parse(((await client.readResource({ uri })).contents[0] as { text: string }).text);
      expect(await read('offer://app')).to.deep.equal({ id: app.id, name: app.name });
      const catalog = await read('offer://catalog');
      expect(catalog.plans.map((p: { id: string }) => p.id)).to.include('pro');
      expect(catalog.entitlements).to.have.length(4);
      expect(catalog.addons).to.have.length(2);
      expect(catalog.incentives).to.deep.equal([]);
      expect((await read('offer://pricing')).map((c: { plan_id: string }) => c.plan_id)).to.include('pro');
      const bob = await read('offer://accounts/bob');
      expect(bob.account.id).to.equal('bob');
      expect(bob.access.plan.id ?? bob.access.plan).to.satisfy((p: unknown) => JSON.stringify(p).includes('pro'));
      expect(JSON.stringify(bob)).to.not.include(app.api_key);
      expect((await read('offer://events')).data[0].type).to.equal('account.created');
      let failed = false;
      await client.readResource({ uri: 'offer://accounts/nobody' }).catch((err: Error) => {
        failed = /404/.test(err.message);
      });
      expect(failed).to.equal(true);
    });

    it('has the four prompts, each one message naming tools', async () => {
      const { client } = await connect();
      const { prompts } = await client.listPrompts();
      expect(prompts.map((p) => p.name).sort()).to.deep.equal([
        'debug_webhooks',
        'investigate_account',
        'launch_incentive',
        'review_catalog',
      ]);
      expect(prompts.find((p) => p.name === 'investigate_account')!.arguments).to.deep.equal([
        { name: 'namespaceId', description: 'The account id', required: true },
      ]);
      const p = await client.getPrompt({ name: 'investigate_account', arguments: { namespaceId: 'alice' } });
      expect(p.messages).to.have.length(1);
      expect((p.messages[0].content as { text: string }).text)
        .to.include('"alice"')
        .and.include('get_account');
      const launch = await client.getPrompt({
        name: 'launch_incentive',
        arguments: { goal: 'win back churned users' },
      });
      expect((launch.messages[0].content as { text: string }).text).to.include('create_incentive');
      const review = await client.getPrompt({ name: 'review_catalog' });
      expect((review.messages[0].content as { text: string }).text).to.include('do not apply');
    });
  });

  describe('connections and the call log', () => {
    it(
      'initialize with the secret key records a connection named from clientInfo and returns ' +
        'Mcp-Session-Id; calls are logged under it',
      async () => {
        const { client, transport } = await connect(app.api_key, 'Claude Desktop');
        expect(transport.sessionId).to.match(/^mcn_/);
        await client.callTool({ name: 'list_plans', arguments: {} });
        await client.callTool({ name: 'get_plan', arguments: { planId: 'nope' } });
        const conns = await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey);
        expect(conns.status).to.equal(200);
        const conn = conns.body.find((c: { id: string }) => c.id === transport.sessionId);
        expect(conn).to.include({ kind: 'secret_key', name: 'Claude Desktop', calls_last_7_days: 2 });
        const calls = await get(`/apps/${app.id}/mcp/calls?connection_id=${transport.sessionId}`, testEnv().adminKey);
        expect(calls.body.data.map((c: { tool: string; status: number }) => [c.tool, c.status])).to.deep.equal([
          ['get_plan', 404],
          ['list_plans', 200],
        ]);
        expect(calls.body.data[0]).to.include({
          is_error: true,
          result: 'Error 404: Plan nope not found',
          connection_id: transport.sessionId,
        });
        expect((await get(`/apps/${app.id}/mcp/calls?limit=1`, testEnv().adminKey)).body.data).to.have.length(1);
        // Most recently used first.
        const second = await connect(app.api_key, 'Second client');
        await second.client.callTool({ name: 'count_accounts', arguments: {} });
        const order = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body.map(
          (c: { name: string }) => c.name,
        );
        expect(order.slice(0, 2)).to.deep.equal(['Second client', 'Claude Desktop']);
      },
    );

    it('an unknown session id is ignored: the call works and is logged without a connection', async () => {
      const res = await raw(app, rpc('tools/call', { name: 'count_accounts', arguments: {} }), app.api_key, {
        'Mcp-Session-Id': 'mcn_unknown',
      });
      expect(res.status).to.equal(200);
      expect(JSON.parse(res.body.result.content[0].text)).to.deep.equal({ count: 0 });
      const [logged] = (await get(`/apps/${app.id}/mcp/calls?limit=1`, testEnv().adminKey)).body.data;
      expect(logged).to.include({ tool: 'count_accounts', connection_id: null, status: 200 });
    });

    it('initialize with a key adds no connection rows without bound: same name reuses its row, at most 100 kept', async () => {
      const first = await raw(app, init('2025-11-25', 'looping agent'));
      const again = await raw(app, init('2025-11-25', 'looping agent'));
      expect(again.headers.get('mcp-session-id')).to.equal(first.headers.get('mcp-session-id'));
      const named = async () => (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body as unknown[];
      expect(await named()).to.have.length(1);
      const statuses: number[] = [];
      for (let i = 0; i < 105; i += 15)
        statuses.push(
          ...(
            await Promise.all(Array.from({ length: 15 }, (_, j) => raw(app, init('2025-11-25', `client ${i + j}`))))
          ).map((r) => r.status),
        );
      expect(statuses.filter((s) => s !== 200)).to.deep.equal([]);
      const kept = await named();
      expect(kept).to.have.length(KEY_SESSIONS_PER_APP);
      // The most recently used are kept; the oldest (the first client) went.
      expect(kept.map((c) => (c as { name: string }).name))
        .to.include('client 104')
        .and.not.include('looping agent');
    });

    it('truncates results over 20,000 characters in the log (the caller gets all of it)', async () => {
      const { client } = await connect();
      const big = 'x'.repeat(30_000);
      await client.callTool({ name: 'merge_plan_meta', arguments: { planId: 'pro', meta: { big } } });
      const result = await client.callTool({ name: 'get_plan', arguments: { planId: 'pro' } });
      expect(resultJson(result).meta.big).to.equal(big);
      const [logged] = (await get(`/apps/${app.id}/mcp/calls?limit=1`, testEnv().adminKey)).body.data;
      expect(logged).to.include({ tool: 'get_plan', truncated: true });
      expect(logged.result).to.have.length(20_000);
    });

    it('admin-only routes: app keys get 401; bad input 400', async () => {
      for (const path of ['/mcp/settings', '/mcp/connections', '/mcp/calls', '/agent/threads']) {
        expect((await get(`/apps/${app.id}${path}`, app.api_key)).status, path).to.equal(401);
      }
      const bad = await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        tool_overrides: { not_a_tool: true },
      });
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.equal('tool_overrides.not_a_tool: no tool of that name');
      expect(
        (await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { access_level: 'owner' })).status,
      ).to.equal(400);
      expect((await del(`/apps/${app.id}/mcp/connections/mcn_nope`, testEnv().adminKey)).status).to.equal(404);
      expect((await get(`/apps/${app.id}/mcp/calls?limit=0`, testEnv().adminKey)).status).to.equal(400);
    });

    it('settings: defaults, merge, and tool_overrides replacing the old map', async () => {
      const admin = testEnv().adminKey;
      const none = { spend_cap: null, usage_caps: [] };
      expect((await get(`/apps/${app.id}/mcp/settings`, admin)).body).to.deep.equal({
        enabled: true,
        access_level: 'write',
        tool_overrides: {},
        key_guardrails: none,
        toolsets: [],
      });
      await patch(`/apps/${app.id}/mcp/settings`, admin, { tool_overrides: { list_plans: false, delete_plan: true } });
      const next = await patch(`/apps/${app.id}/mcp/settings`, admin, {
        access_level: 'read',
        tool_overrides: { get_app: false },
      });
      expect(next.body).to.deep.equal({
        enabled: true,
        access_level: 'read',
        tool_overrides: { get_app: false },
        key_guardrails: none,
        toolsets: [],
      });
      expect((await get(`/apps/${app.id}/mcp/settings`, admin)).body).to.deep.equal(next.body);
    });
  });

  describe('agent threads', () => {
    it('PUT creates then replaces, PATCH renames, list by user newest first, DELETE; 404 after', async () => {
      const admin = testEnv().adminKey;
      const base = `/apps/${app.id}/agent/threads`;
      const created = await call('PUT', `${base}/t1`, {
        token: admin,
        body: { user_id: 'u1', messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(created.status, created.text).to.equal(201);
      expect(created.body).to.include({ id: 't1', user_id: 'u1', title: null });
      const replaced = await call('PUT', `${base}/t1`, {
        token: admin,
        body: {
          user_id: 'u1',
          messages: [
            { role: 'user', content: 'a' },
            { role: 'assistant', content: 'b' },
          ],
          title: 'First',
        },
      });
      expect(replaced.status).to.equal(200);
      expect(replaced.body.messages).to.have.length(2);
      await call('PUT', `${base}/t2`, { token: admin, body: { user_id: 'u2', messages: [] } });
      expect((await patch(`${base}/t1`, admin, { title: 'Renamed' })).body.title).to.equal('Renamed');
      const list = await get(`${base}?user_id=u1`, admin);
      expect(list.body.data).to.have.length(1);
      expect(list.body.data[0]).to.include({ id: 't1', title: 'Renamed', message_count: 2 });
      expect((await get(base, admin)).body.data.map((t: { id: string }) => t.id)).to.deep.equal(['t1', 't2']);
      expect((await call('PUT', `${base}/t3`, { token: admin, body: { messages: [] } })).body.error).to.equal(
        'body.user_id: is required'.replace('body.', ''),
      );
      expect((await del(`${base}/t1`, admin)).body).to.deep.equal({ deleted: true, id: 't1' });
      expect((await get(`${base}/t1`, admin)).status).to.equal(404);
    });
  });
});
