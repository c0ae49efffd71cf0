import { expect } from 'chai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { markWorkspaceReadOnly } from '../../src/apps/apps.service.js';
import { READ_ONLY_APP } from '../../src/http/guard.js';
import { dryRunSchema, toolErrorSchema } from '../../src/mcp/output-schemas.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { startReceiver } from '../helpers/receiver.js';
import { call, get, patch, post } from '../helpers/http.js';
import { ALL_TOOLSETS, connectMcp, mcpPost, resultText } from '../helpers/mcp.js';
import { testEnv } from '../helpers/servers.js';

/**
 * Issue 39, item 5: the MCP server as the spec names it, tried as an outside client would (the MCP SDK's own client,
 * which checks every structured content against the tool's output schema, errors included; and raw JSON-RPC).
 */
const rpc = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});
const toolCall = (name: string, args: Record<string, unknown>, id: number | string = 1) =>
  rpc('tools/call', { name, arguments: args }, id);
type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content: unknown };

describe('MCP as the spec names it (issue 39)', function () {
  this.timeout(60_000);
  let app: TestApp;
  const clients: Client[] = [];
  // Every toolset: these tests read tools of every group from the list.
  const connect = async (key = app.api_key) => {
    const c = await connectMcp(app.id, { key, headers: ALL_TOOLSETS });
    clients.push(c.client);
    return c.client;
  };
  beforeEach(async () => {
    ({ app } = await seededApp({ accounts: [{ id: 'alice', plan: 'pro' }] }));
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  describe('argument names', () => {
    it('a client written against the spec: namespaceId in tools, the template and the prompt', async () => {
      const client = await connect();
      const account = await client.callTool({ name: 'get_account', arguments: { namespaceId: 'alice' } });
      expect(account.isError, resultText(account)).to.equal(false);
      expect(account.structuredContent).to.include({ id: 'alice', plan: 'pro' });
      const created = await client.callTool({
        name: 'create_account',
        arguments: { namespaceId: 'bob', plan: 'free' },
      });
      expect(created.structuredContent).to.include({ id: 'bob', plan: 'free' });
      const counted = await client.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'alice', entitlementId: 'api_calls', amount: 3 },
      });
      expect(counted.structuredContent).to.deep.equal({ entitlement: 'api_calls', count: 3 });
      const summary = await client.callTool({
        name: 'get_usage_summary',
        arguments: { interval: '7d', namespaceId: 'alice' },
      });
      expect(summary.isError, resultText(summary)).to.equal(false);
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).to.deep.equal(['offer://accounts/{namespaceId}']);
      const read = await client.readResource({ uri: 'offer://accounts/alice' });
      expect(JSON.parse((read.contents[0] as { text: string }).text).account.id).to.equal('alice');
      const { prompts } = await client.listPrompts();
      expect(prompts.find((p) => p.name === 'investigate_account')!.arguments).to.deep.equal([
        { name: 'namespaceId', description: 'The account id', required: true },
      ]);
      const prompt = await client.getPrompt({ name: 'investigate_account', arguments: { namespaceId: 'alice' } });
      expect((prompt.messages[0].content as { text: string }).text).to.include('namespaceId "alice"');
      // No tool takes the old name.
      const { tools } = await client.listTools();
      for (const t of tools) expect(Object.keys(t.inputSchema.properties ?? {}), t.name).to.not.include('accountId');
    });

    it('one name for one thing: the attach tools take entitlementId and addonId, as their siblings do', async () => {
      const client = await connect();
      const { tools } = await client.listTools();
      const props = (name: string) => Object.keys(tools.find((t) => t.name === name)!.inputSchema.properties ?? {});
      expect(props('attach_plan_entitlement')).to.deep.equal(['planId', 'entitlementId', 'max', 'dry_run']);
      expect(props('set_plan_entitlement_limit')).to.deep.equal(['planId', 'entitlementId', 'max', 'dry_run']);
      expect(props('attach_plan_addon')).to.deep.equal(['planId', 'addonId', 'dry_run']);
      expect(props('detach_plan_addon')).to.deep.equal(['planId', 'addonId', 'dry_run']);
      expect(props('attach_incentive_entitlement')).to.include('entitlementId').and.not.include('id');
      expect(props('attach_incentive_addon')).to.include('addonId').and.not.include('id');
      const attached = await client.callTool({
        name: 'attach_plan_entitlement',
        arguments: { planId: 'free', entitlementId: 'exports_feature', max: 3 },
      });
      // The route's 404 (no such entitlement) names the record, whatever the argument's name.
      expect(resultText(attached)).to.match(/^Error 404: Entitlement exports_feature not found/);
      const ok = await client.callTool({
        name: 'attach_plan_addon',
        arguments: { planId: 'free', addonId: 'priority' },
      });
      expect(ok.isError, resultText(ok)).to.equal(false);
      expect((ok.structuredContent as { addons: string[] }).addons).to.include('priority');
    });

    it("errors name the argument as the tool's schema names it", async () => {
      const client = await connect();
      const text = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as Result;
        expect(r.isError, name).to.equal(true);
        return resultText(r);
      };
      expect(await text('create_account', { plan: 'pro' })).to.equal('Error 400: namespaceId: is required');
      expect(await text('create_account', { namespaceId: 'x'.repeat(300), plan: 'pro' })).to.match(
        /^Error 400: namespaceId: /,
      );
      expect(await text('get_account', {})).to.equal('Error 400: namespaceId: is required');
      expect(await text('attach_plan_entitlement', { planId: 'pro' })).to.equal(
        'Error 400: entitlementId: is required',
      );
      expect(await text('attach_incentive_addon', { incentiveId: 'x', addonId: 7 })).to.match(/^Error 400: addonId: /);
      // A query field the tool renames (the analytics filter `namespace`) is named as the tool names it.
      expect(await text('get_usage_summary', { interval: '7d', namespaceId: 'x'.repeat(300) })).to.match(
        /^Error 400: namespaceId: /,
      );
      expect(await text('merge_plan_meta', { planId: 'pro', meta: 'not an object' })).to.match(/^Error 400: meta: /);
    });

    it('unknown arguments are refused, naming them (and the name the tool uses); nothing is done', async () => {
      const client = await connect();
      const bogus = (await client.callTool({ name: 'get_plan', arguments: { planId: 'pro', bogus: 1 } })) as Result;
      expect(bogus.isError).to.equal(true);
      expect(resultText(bogus)).to.equal('Error 400: Unknown argument `bogus`: get_plan takes `planId`');
      expect(bogus.structuredContent).to.deep.equal({
        error: 'Unknown argument `bogus`: get_plan takes `planId`',
        status: 400,
      });
      const old = await client.callTool({ name: 'get_account', arguments: { accountId: 'alice' } });
      expect(resultText(old)).to.equal(
        'Error 400: Unknown argument `accountId`: get_account takes `namespaceId` (`accountId` is `namespaceId` here)',
      );
      const attach = await client.callTool({
        name: 'attach_plan_addon',
        arguments: { planId: 'free', id: 'priority' },
      });
      expect(resultText(attach)).to.match(/Unknown argument `id`: .*\(`id` is `addonId` here\)$/);
      expect(resultText(await client.callTool({ name: 'count_accounts', arguments: { x: 1, y: 2 } }))).to.equal(
        'Error 400: Unknown arguments `x`, `y`: count_accounts takes no arguments',
      );
      // A read tool takes no dry_run (nothing to preview): it is an unknown argument there too.
      expect(resultText(await client.callTool({ name: 'list_plans', arguments: { dry_run: true } }))).to.match(
        /^Error 400: Unknown argument `dry_run`/,
      );
      // update_app changes only the name (spec): another field is refused, not ignored.
      const renamed = await client.callTool({
        name: 'update_app',
        arguments: { name: 'Renamed', checkout_url: 'https://evil.example/' },
      });
      expect(resultText(renamed)).to.match(/^Error 400: Unknown argument `checkout_url`: update_app takes `name`/);
      const write = await client.callTool({
        name: 'create_plan',
        arguments: { id: 'team', name: 'Team', colour: 'red' },
      });
      expect(resultText(write)).to.match(/^Error 400: Unknown argument `colour`/);
      expect((await get(`/apps/${app.id}/plans/team`, app.api_key)).status).to.equal(404);
      expect((await get(`/apps/${app.id}`, app.api_key)).body.name).to.equal(app.name);
      // With dry_run: the same refusal (arguments are checked before anything else).
      const dry = await client.callTool({
        name: 'create_plan',
        arguments: { id: 'team', colour: 'red', dry_run: true },
      });
      expect(resultText(dry)).to.match(/^Error 400: Unknown argument `colour`/);
    });
  });

  describe('results', () => {
    it('every answer carries structuredContent matching the output schema: 400, 403, 404, 409, 402, dry runs', async () => {
      await createAccount(app, { id: 'f1', plan: 'free' });
      // The SDK client checks each structured content against the tool's output schema (errors too): a mismatch
      // would throw here.
      const client = await connect();
      const errorOf = async (name: string, args: Record<string, unknown>, status: number) => {
        const r = (await client.callTool({ name, arguments: args })) as Result;
        expect(r.isError, `${name}: ${resultText(r)}`).to.equal(true);
        const parsed = toolErrorSchema.loose().parse(r.structuredContent);
        expect(parsed.status, name).to.equal(status);
        // The text is the spec's `Error <status>: <message>` (a 402's message names the upgrade and its link).
        const message = status === 402 ? (r.structuredContent as { message: string }).message : parsed.error;
        expect(resultText(r)).to.equal(`Error ${status}: ${message}`);
        return r.structuredContent!;
      };
      await errorOf('create_plan', { name: 'No id' }, 400);
      await errorOf('get_plan', { planId: 'nope' }, 404);
      expect(await errorOf('create_plan', { id: 'pro', name: 'Pro' }, 409)).to.include({ status: 409 });
      await client.callTool({ name: 'increment_usage', arguments: { namespaceId: 'f1', entitlementId: 'seats' } });
      const limit = await errorOf('increment_usage', { namespaceId: 'f1', entitlementId: 'seats' }, 402);
      expect(limit).to.include({ error: 'limit_reached', status: 402 });
      expect(limit).to.have.property('offer');
      // A tool switched off for OAuth connections: 403 with the reason (keys call everything, so a read-only
      // connection is what meets it; test/api/oauth.test.ts makes those). Here: the server's own 403 for a cap.
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        key_guardrails: { usage_caps: [{ entitlement_id: 'api_calls', amount: 1, period: 'day' }] },
      });
      const cap = await errorOf('add_usage_amount', { namespaceId: 'f1', entitlementId: 'api_calls', amount: 5 }, 403);
      expect(cap).to.have.property('cap_reached');
      // Dry runs: the would-be answer, structured.
      const dry = await client.callTool({
        name: 'delete_plan',
        arguments: { planId: 'nope', dry_run: true },
      });
      expect(dry.isError).to.equal(false);
      expect(dryRunSchema.parse(dry.structuredContent).dry_run).to.deep.include({ would: 'fail', status: 404 });
    });

    it('tools/list: every output schema is typed to its fields (no bare object, no `{}` field)', async () => {
      const res = await mcpPost(app.id, rpc('tools/list'), app.api_key, ALL_TOOLSETS);
      type Node = { type?: unknown; anyOf?: Node[]; properties?: Record<string, Node>; items?: Node; enum?: unknown };
      const loose: string[] = [];
      const walk = (n: Node, at: string) => {
        for (const [k, v] of Object.entries(n.properties ?? {})) {
          if (v.type === undefined && !v.anyOf && v.enum === undefined && !('const' in v)) loose.push(`${at}.${k}`);
          walk(v, `${at}.${k}`);
        }
        if (n.items) walk(n.items, `${at}[]`);
        for (const b of n.anyOf ?? []) walk(b, at);
      };
      // call_tool answers what the tool it calls answers: it has no schema of its own.
      const tools = (res.body.result.tools as { name: string; outputSchema: Node }[]).filter(
        (t) => t.name !== 'call_tool',
      );
      expect(tools.length).to.be.above(70);
      for (const t of tools) {
        expect(t.outputSchema.type, t.name).to.equal('object');
        expect(t.outputSchema.anyOf, t.name).to.be.an('array').that.is.not.empty;
        walk(t.outputSchema, t.name);
      }
      expect(loose).to.deep.equal([]);
      const plan = tools.find((t) => t.name === 'create_plan')!.outputSchema.anyOf![0];
      expect(plan.properties!.id).to.deep.equal({ type: 'string' });
      expect(plan.properties!.entitlements.items!.properties!.max).to.deep.equal({ type: ['number', 'null'] });
    });
  });

  describe('protocol errors', () => {
    it('malformed JSON is JSON-RPC -32700; a body that is not a message -32600', async () => {
      const res = await fetch(`${testEnv().baseUrl}/apps/${app.id}/mcp`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${app.api_key}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"',
      });
      expect(res.status).to.equal(400);
      const body = (await res.json()) as { jsonrpc: string; id: null; error: { code: number; message: string } };
      expect(body).to.deep.include({ jsonrpc: '2.0', id: null });
      expect(body.error.code).to.equal(-32700);
      expect(body.error.message).to.match(/^Parse error/);
      const notRpc = await mcpPost(app.id, { hello: 'world' }, app.api_key);
      expect(notRpc.status).to.equal(400);
      expect(notRpc.body.error.code).to.equal(-32600);
      // A 401 keeps the spec's `{ error: "Unauthorized" }` and its WWW-Authenticate (clients act on the header).
      const anonymous = await mcpPost(app.id, rpc('tools/list'), null);
      expect(anonymous.status).to.equal(401);
      expect(anonymous.body).to.deep.equal({ error: 'Unauthorized' });
    });

    it('an unknown tool and bad params are -32602, through the SDK client and raw', async () => {
      const client = await connect();
      const err = await client.callTool({ name: 'delete_app', arguments: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(McpError);
      expect((err as McpError).code).to.equal(-32602);
      expect((err as McpError).message).to.include('Unknown tool: delete_app');
      const raw = await mcpPost(app.id, toolCall('nope', {}, 'x1'), app.api_key);
      expect(raw.status).to.equal(200);
      expect(raw.body).to.deep.include({ id: 'x1' });
      expect(raw.body.error.code).to.equal(-32602);
      const badName = await mcpPost(app.id, rpc('tools/call', { name: 5 }, 2), app.api_key);
      expect(badName.body.error.code).to.equal(-32602);
      expect(badName.body.error.message).to.match(/^Invalid params for tools\/call: params\.name/);
      const badArgs = await mcpPost(app.id, rpc('tools/call', { name: 'get_plan', arguments: [1] }, 3), app.api_key);
      expect(badArgs.body.error.code).to.equal(-32602);
      const noUri = await mcpPost(app.id, rpc('resources/read', {}, 4), app.api_key);
      expect(noUri.body.error.code).to.equal(-32602);
      const noPrompt = await mcpPost(app.id, rpc('prompts/get', { name: 'nope' }, 5), app.api_key);
      expect(noPrompt.body.error.code).to.equal(-32602);
      // The unknown call is logged for the operator.
      const [logged] = (await get(`/apps/${app.id}/mcp/calls?limit=1`, testEnv().adminKey)).body.data;
      expect(logged).to.include({ tool: 'nope', status: 404, is_error: true });
    });

    it('batches: taken under 2025-03-26 and 2024-11-05 (or no version header), refused from 2025-06-18 on', async () => {
      const batch = [rpc('tools/list', {}, 1), rpc('prompts/list', {}, 2)];
      for (const version of ['2025-06-18', '2025-11-25']) {
        const res = await mcpPost(app.id, batch, app.api_key, { 'Mcp-Protocol-Version': version });
        expect(res.status, version).to.equal(400);
        expect(res.body.error.code, version).to.equal(-32600);
        expect(res.body.error.message).to.include(`not part of MCP protocol version ${version}`);
      }
      const olders: Record<string, string>[] = [
        { 'Mcp-Protocol-Version': '2025-03-26' },
        { 'Mcp-Protocol-Version': '2024-11-05' },
        {},
      ];
      for (const headers of olders) {
        const res = await mcpPost(app.id, batch, app.api_key, headers);
        expect(res.status, JSON.stringify(headers)).to.equal(200);
        expect(res.body.map((r: { id: number }) => r.id)).to.deep.equal([1, 2]);
      }
      // One message under the newest version is answered as always.
      const one = await mcpPost(app.id, rpc('tools/list'), app.api_key, { 'Mcp-Protocol-Version': '2025-11-25' });
      expect(one.status).to.equal(200);
    });

    it('MCP turned off: 403 with a JSON-RPC error under the request id, for every credential', async () => {
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { enabled: false });
      for (const cred of [app.api_key, testEnv().adminKey]) {
        const res = await mcpPost(app.id, rpc('tools/list', {}, 41), cred);
        expect(res.status).to.equal(403);
        expect(res.body).to.deep.equal({
          jsonrpc: '2.0',
          id: 41,
          error: { code: -32000, message: "This app's MCP server is turned off" },
        });
      }
      // The SDK client reads it as an error it can show.
      const failed = await connectMcp(app.id, { key: app.api_key }).then(
        () => null,
        (e: unknown) => (e as Error).message,
      );
      expect(failed).to.match(/turned off/);
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { enabled: true });
    });
  });

  describe('dry_run answers what the real call would answer', () => {
    it('lookups: a missing delivery or endpoint is its 404; a real one is described, nothing sent', async () => {
      const receiver = await startReceiver();
      after(() => receiver.close());
      const client = await connect();
      const hook = (await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] })).body;
      const dry = async (name: string, args: Record<string, unknown>) => {
        const r = await client.callTool({ name, arguments: { ...args, dry_run: true } });
        expect(r.isError, resultText(r)).to.equal(false);
        return dryRunSchema.parse(r.structuredContent).dry_run;
      };
      const real = async (name: string, args: Record<string, unknown>) =>
        toolErrorSchema.loose().parse((await client.callTool({ name, arguments: args })).structuredContent);
      const bogus = { webhookId: hook.id, deliveryId: 'whd_bogus' };
      expect(await dry('retry_webhook_delivery', bogus)).to.deep.include({ would: 'fail', status: 404 });
      expect((await real('retry_webhook_delivery', bogus)).status).to.equal(404);
      const noHook = { webhookId: 'whk_nope', deliveryId: 'whd_bogus' };
      expect((await dry('retry_webhook_delivery', noHook)).error).to.include({ status: 404 });
      expect(await dry('send_test_event', { webhookId: 'whk_nope' })).to.deep.include({ would: 'fail', status: 404 });
      expect((await real('send_test_event', { webhookId: 'whk_nope' })).status).to.equal(404);
      expect(await dry('create_upgrade_link', { namespaceId: 'nobody', plan: 'pro' })).to.deep.include({
        would: 'fail',
        status: 404,
      });
      expect(await dry('change_subscription', { namespaceId: 'nobody', plan: 'pro' })).to.deep.include({
        would: 'fail',
        status: 404,
      });
      // A bad event type is the route's 400, named as the tool names it.
      const badType = await dry('send_test_event', { webhookId: hook.id, type: 'no.such' });
      expect(badType).to.deep.include({ would: 'fail', status: 400 });
      expect(badType.error!.error).to.match(/^type: /);
      // Deliveries that exist are described: where they would go, which attempt.
      const test = await dry('send_test_event', { webhookId: hook.id, type: 'plan.created' });
      expect(test.would).to.equal('call');
      expect(test.description).to.match(/^Would send one test plan\.created event \(.*\) to http/);
      expect(test.description).to.include(receiver.url);
      expect(receiver.received).to.have.length(0);
      const sent = await client.callTool({ name: 'send_test_event', arguments: { webhookId: hook.id } });
      const delivery = sent.structuredContent as { id: string; status: string; attempts: number };
      expect(delivery.status, resultText(sent)).to.equal('succeeded');
      const described = await dry('retry_webhook_delivery', { webhookId: hook.id, deliveryId: delivery.id });
      expect(described.would).to.equal('call');
      expect(described.description)
        .to.include(receiver.url)
        .and.include(delivery.id)
        .and.include(`attempt ${delivery.attempts + 1}`);
      expect(receiver.received).to.have.length(1);
      // A disabled endpoint: the retry would fail the delivery at once and send nothing (no outside call).
      await patch(`/apps/${app.id}/webhooks/${hook.id}`, app.api_key, { enabled: false });
      const disabled = await dry('retry_webhook_delivery', { webhookId: hook.id, deliveryId: delivery.id });
      expect(disabled.description).to.match(/is disabled: a retry would mark .* failed with "Endpoint disabled"/);
    });

    it("the read-only demo: a dry run of a write says the real call's 403 (outside calls included)", async () => {
      const client = await connect();
      const hook = (
        await post(`/apps/${app.id}/webhooks`, app.api_key, { url: 'https://hooks.example/in', events: ['*'] })
      ).body;
      const orgId = `ro_mcp_${Date.now()}`;
      await post('/orgs', testEnv().adminKey, { id: orgId, app_ids: [app.id] });
      for (const change of await markWorkspaceReadOnly(testEnv().deps.orm.em.fork(), orgId))
        await testEnv().deps.credentials.confirm(change);
      const cases: [string, Record<string, unknown>][] = [
        ['create_plan', { id: 'team', name: 'Team' }],
        ['delete_account', { namespaceId: 'alice' }],
        ['increment_usage', { namespaceId: 'alice', entitlementId: 'api_calls' }],
        ['send_test_event', { webhookId: hook.id }],
        ['retry_webhook_delivery', { webhookId: hook.id, deliveryId: 'whd_bogus' }],
        ['create_upgrade_link', { namespaceId: 'alice', plan: 'scale' }],
        ['change_subscription', { namespaceId: 'alice', plan: 'scale' }],
      ];
      for (const [name, args] of cases) {
        const dry = await client.callTool({ name, arguments: { ...args, dry_run: true } });
        const said = dryRunSchema.parse(dry.structuredContent).dry_run;
        expect(said, name).to.deep.include({ would: 'fail', status: 403 });
        expect(said.error!.error, name).to.equal(READ_ONLY_APP);
        const real = (await client.callTool({ name, arguments: args })) as Result;
        expect(real.isError, name).to.equal(true);
        expect(real.structuredContent, name).to.deep.equal(said.error);
      }
      expect((await get(`/apps/${app.id}/plans/team`, app.api_key)).status).to.equal(404);
      expect((await get(`/apps/${app.id}/namespaces/alice`, app.api_key)).status).to.equal(200);
      await call('DELETE', `/orgs/${orgId}`, { token: testEnv().adminKey });
    });
  });
});
