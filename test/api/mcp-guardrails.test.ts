import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { sql } from '../../src/db/sql.js';
import { DRY_RUN_DESCRIPTION } from '../../src/mcp/tools.js';
import { createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { ALL_TOOLSETS, connectMcp, mcpUrl, resultText } from '../helpers/mcp.js';
import { openAuthorization, REDIRECT, TestOAuthProvider } from '../helpers/oauth.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';

type Structured = Record<string, unknown> & {
  cap_reached?: { cap: Record<string, unknown>; used: number; left: number; requested: number; raise: { api: string } };
  dry_run?: { would: string; status?: number; result?: unknown; error?: Record<string, unknown>; description?: string };
};
const structured = (r: unknown) => (r as { structuredContent: Structured }).structuredContent;

/** Rows that would show a change happened: events, their deliveries, outbox commands (workflows), checkouts. */
async function sideEffects(appId: string) {
  const em = testEnv().deps.orm.em.fork();
  const [row] = await sql<Record<string, string>>(
    em,
    `select (select count(*) from events where app_id = $1) as events,
            (select count(*) from webhook_deliveries d join webhook_endpoints w on w.id = d.endpoint_id
              where w.app_id = $1) as deliveries,
            (select count(*) from outbox where payload::text like '%' || $1 || '%') as outbox,
            (select count(*) from checkouts where app_id = $1) as checkouts,
            (select count(*) from plans where app_id = $1) as plans`,
    [appId],
  );
  return row;
}

describe('MCP agent guard-rails: caps, dry runs', function () {
  this.timeout(60_000);
  let app: TestApp;
  const clients: Client[] = [];
  beforeEach(async () => {
    app = await createTestApp();
    await seedCatalog(app);
    await createAccount(app, { id: 'a1', plan: 'pro' });
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  const connect = async () => {
    const { client } = await connectMcp(app.id, { key: app.api_key, headers: ALL_TOOLSETS });
    clients.push(client);
    return client;
  };
  const count = async (account: string, entitlement: string) =>
    (await get(`/apps/${app.id}/namespaces/${account}/usage/${entitlement}`, app.api_key)).body.count as number;

  describe('usage caps', () => {
    it('concurrent calls never pass a usage cap; refusals say which cap, what is left, who raises it', async () => {
      const set = await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        key_guardrails: { usage_caps: [{ entitlement_id: 'api_calls', amount: 7, period: 'day' }] },
      });
      expect(set.status, set.text).to.equal(200);
      expect(set.body.key_guardrails.usage_caps[0]).to.include({
        entitlement_id: 'api_calls',
        amount: 7,
        used: 0,
        left: 7,
      });
      const client = await connect();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          client.callTool({
            name: i % 2 ? 'increment_usage' : 'add_usage_amount',
            arguments: { namespaceId: 'a1', entitlementId: 'api_calls', ...(i % 2 ? {} : { amount: 1 }) },
          }),
        ),
      );
      const ok = results.filter((r) => !r.isError);
      const refused = results.filter((r) => r.isError);
      expect(ok).to.have.length(7);
      expect(refused).to.have.length(13);
      expect(await count('a1', 'api_calls')).to.equal(7);
      const text = resultText(refused[0]);
      expect(text).to.match(
        /^Error 403: Usage cap reached: this app's key-based mcp use may record 7 of api_calls per day/,
      );
      expect(text).to.include('0 left');
      expect(text).to.include(`PATCH /apps/${app.id}/mcp/settings with key_guardrails`);
      expect(structured(refused[0]).cap_reached).to.deep.include({ used: 7, left: 0, requested: 1 });
      // A decrement is not counted, and records nothing against the cap.
      const down = await client.callTool({
        name: 'decrement_usage',
        arguments: { namespaceId: 'a1', entitlementId: 'api_calls' },
      });
      expect(down.isError, resultText(down)).to.equal(false);
      // Another entitlement has no cap.
      const seats = await client.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'a1', entitlementId: 'seats', amount: 2 },
      });
      expect(seats.isError, resultText(seats)).to.equal(false);
      const view = (await get(`/apps/${app.id}/mcp/settings`, testEnv().adminKey)).body.key_guardrails;
      expect(view.usage_caps[0]).to.include({ used: 7, left: 0 });
      // Raised by the operator: the next call passes.
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        key_guardrails: { usage_caps: [{ entitlement_id: 'api_calls', amount: 10, period: 'day' }] },
      });
      const again = await client.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'a1', entitlementId: 'api_calls', amount: 3 },
      });
      expect(again.isError, resultText(again)).to.equal(false);
      const over = await client.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'a1', entitlementId: 'api_calls', amount: 1 },
      });
      expect(resultText(over)).to.include('10 recorded today, 0 left, this call would record 1');
    });

    it('a call the service refuses (402) gives its amount back; bad caps are a 400', async () => {
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        key_guardrails: { usage_caps: [{ entitlement_id: 'seats', amount: 6, period: 'month' }] },
      });
      const client = await connect();
      const blocked = await client.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'a1', entitlementId: 'seats', amount: 6 },
      });
      expect(resultText(blocked)).to.match(/^Error 402: /);
      const ok = await client.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'a1', entitlementId: 'seats', amount: 5 },
      });
      expect(ok.isError, resultText(ok)).to.equal(false);
      const view = (await get(`/apps/${app.id}/mcp/settings`, testEnv().adminKey)).body.key_guardrails;
      expect(view.usage_caps[0]).to.include({ used: 5, left: 1, period: 'month' });
      for (const bad of [
        { usage_caps: [{ entitlement_id: 'seats', amount: -1, period: 'day' }] },
        { usage_caps: [{ entitlement_id: 'seats', amount: 1, period: 'week' }] },
        {
          usage_caps: [
            { entitlement_id: 'seats', amount: 1, period: 'day' },
            { entitlement_id: 'seats', amount: 2, period: 'day' },
          ],
        },
        { spend_cap: { amount: 10, currency: 'dollars', period: 'day' } },
      ]) {
        const res = await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { key_guardrails: bad });
        expect(res.status, JSON.stringify(bad)).to.equal(400);
        expect(res.body.error).to.match(/^key_guardrails|^usage_caps/);
      }
    });
  });

  describe('spend caps', () => {
    it('money in checkout links counts against the spend cap, concurrently; another currency is refused', async () => {
      await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://shop.example/pricing' });
      await createAccount(app, { id: 'f1', plan: 'free' });
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        key_guardrails: { spend_cap: { amount: 100, currency: 'usd', period: 'month' } },
      });
      const client = await connect();
      // Scale is 99 a month: of five at once, exactly one fits in 100.
      const links = await Promise.all(
        Array.from({ length: 5 }, () =>
          client.callTool({ name: 'create_upgrade_link', arguments: { namespaceId: 'f1', plan: 'scale' } }),
        ),
      );
      expect(links.filter((r) => !r.isError)).to.have.length(1);
      const refusal = links.find((r) => r.isError)!;
      expect(resultText(refusal)).to.match(
        /^Error 403: Spend cap reached: .* worth 100 USD per calendar month \(UTC\); 99 started this month, 1 left, this call would start 99\. Nothing was started\. To raise it: /,
      );
      expect(structured(refusal).cap_reached!.cap).to.deep.equal({
        kind: 'spend',
        currency: 'USD',
        amount: 100,
        period: 'month',
      });
      // A failed call (no price) takes nothing.
      const noPrice = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'internal' },
      });
      expect(resultText(noPrice)).to.match(/^Error 409: /);
      const view = (await get(`/apps/${app.id}/mcp/settings`, testEnv().adminKey)).body.key_guardrails;
      expect(view.spend_cap).to.include({ amount: 100, currency: 'USD', used: 99, left: 1 });

      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
        key_guardrails: { spend_cap: { amount: 1000, currency: 'EUR', period: 'day' } },
      });
      const euro = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'pro' },
      });
      expect(resultText(euro)).to.match(
        /^Error 403: Spend cap: this call would start a charge in USD, and the spend cap is in EUR/,
      );
      // Without a cap nothing is counted.
      await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { key_guardrails: { spend_cap: null } });
      const free = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'f1', plan: 'pro' },
      });
      expect(free.isError, resultText(free)).to.equal(false);
    });
  });

  describe('per OAuth connection', () => {
    async function signIn(guardrails?: Record<string, unknown>) {
      const provider = new TestOAuthProvider(async (url) => {
        const requestId = await openAuthorization(url);
        const res = await post(`/oauth/requests/${requestId}/approve`, testEnv().adminKey, {
          user: { id: 'user_1', name: 'Ada' },
          access_level: 'write',
          ...(guardrails ? { guardrails } : {}),
        });
        expect(res.status, res.text).to.equal(200);
        const redirect = new URL(res.body.redirect_url);
        expect(`${redirect.origin}${redirect.pathname}`).to.equal(REDIRECT);
        return redirect.searchParams.get('code')!;
      });
      const transport = new StreamableHTTPClientTransport(mcpUrl(app.id), { authProvider: provider });
      await new Client({ name: 'capped', version: '1' }).connect(transport).catch(() => undefined);
      await transport.finishAuth(provider.code!);
      const client = new Client({ name: 'capped', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(mcpUrl(app.id), { authProvider: provider }));
      clients.push(client);
      return client;
    }

    it('caps set at consent hold for that connection only; an operator changes them; the list shows them with what is used', async () => {
      const client = await signIn({ usage_caps: [{ entitlement_id: 'api_calls', amount: 2, period: 'day' }] });
      const add = (amount: number) =>
        client.callTool({
          name: 'add_usage_amount',
          arguments: { namespaceId: 'a1', entitlementId: 'api_calls', amount },
        });
      expect((await add(2)).isError).to.equal(false);
      const refused = await add(1);
      const [conn] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body;
      expect(resultText(refused)).to.include(`PATCH /apps/${app.id}/mcp/connections/${conn.id} with guardrails`);
      expect(resultText(refused)).to.match(/^Error 403: Usage cap reached: this connection may record 2 of api_calls/);
      expect(conn.guardrails.usage_caps[0]).to.include({ entitlement_id: 'api_calls', amount: 2, used: 2, left: 0 });
      expect(conn.guardrails.spend_cap).to.equal(null);
      // The key has no caps: it records on.
      const keyClient = await connect();
      const byKey = await keyClient.callTool({
        name: 'add_usage_amount',
        arguments: { namespaceId: 'a1', entitlementId: 'api_calls', amount: 50 },
      });
      expect(byKey.isError, resultText(byKey)).to.equal(false);
      // The operator raises the cap and adds a spend cap; the usage caps stay when only the spend cap is sent.
      const raised = await patch(`/apps/${app.id}/mcp/connections/${conn.id}`, testEnv().adminKey, {
        guardrails: { usage_caps: [{ entitlement_id: 'api_calls', amount: 5, period: 'day' }] },
      });
      expect(raised.status, raised.text).to.equal(200);
      const spend = await patch(`/apps/${app.id}/mcp/connections/${conn.id}`, testEnv().adminKey, {
        guardrails: { spend_cap: { amount: 10, currency: 'USD', period: 'day' } },
      });
      expect(spend.body.guardrails.usage_caps[0]).to.include({ amount: 5, used: 2, left: 3 });
      expect(spend.body.guardrails.spend_cap).to.include({ amount: 10, currency: 'USD', used: 0, left: 10 });
      expect((await add(3)).isError).to.equal(false);
      const link = await client.callTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: 'a1', plan: 'scale' },
      });
      expect(resultText(link)).to.match(
        /^Error 403: Spend cap reached: this connection may start .* worth 10 USD per day/,
      );
      // Key sessions share the app's key guard-rails; unknown connections are a 404.
      const [keySession] = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body.filter(
        (c: { kind: string }) => c.kind !== 'oauth',
      );
      expect(keySession.guardrails).to.equal(null);
      const keyPatch = await patch(`/apps/${app.id}/mcp/connections/${keySession.id}`, testEnv().adminKey, {
        guardrails: { spend_cap: null },
      });
      expect(keyPatch.status).to.equal(400);
      expect(keyPatch.body.error).to.match(/key_guardrails in the MCP settings/);
      expect(
        (await patch(`/apps/${app.id}/mcp/connections/mcn_nope`, testEnv().adminKey, { guardrails: {} })).status,
      ).to.equal(404);
      expect(
        (await patch(`/apps/${app.id}/mcp/connections/${conn.id}`, app.api_key, { guardrails: {} })).status,
      ).to.equal(401);
    });
  });

  describe('dry_run', () => {
    it('every write tool takes dry_run with one shared description; read tools do not', async () => {
      const client = await connect();
      const { tools } = await client.listTools();
      // Every route tool (call_tool passes its `arguments`, dry_run included, to the tool it calls).
      expect(tools.length).to.be.above(70);
      for (const t of tools.filter((x) => x.name !== 'find_tools' && x.name !== 'call_tool')) {
        const prop = (t.inputSchema.properties ?? {}).dry_run as { description?: string } | undefined;
        if (t.annotations?.readOnlyHint) expect(prop, t.name).to.equal(undefined);
        else expect(prop, t.name).to.deep.equal({ type: 'boolean', description: DRY_RUN_DESCRIPTION });
      }
    });

    it('usage: says the count it would reach, or the 402 and the cap it would meet; nothing is recorded', async () => {
      await createAccount(app, { id: 'f1', plan: 'free' });
      const receiver = await startReceiver();
      try {
        await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] });
        const before = await sideEffects(app.id);
        const client = await connect();
        const dry = await client.callTool({
          name: 'add_usage_amount',
          arguments: { namespaceId: 'f1', entitlementId: 'api_calls', amount: 100, dry_run: true },
        });
        expect(dry.isError).to.equal(false);
        expect(resultText(dry)).to.match(
          /^Dry run, nothing was done\. Would record 100 of api_calls; the count would become 100\./,
        );
        expect(structured(dry).dry_run).to.deep.include({ would: 'succeed', status: 200 });
        expect(structured(dry).dry_run!.result).to.deep.equal({ entitlement: 'api_calls', count: 100 });
        const seats = await client.callTool({
          name: 'add_usage_amount',
          arguments: { namespaceId: 'f1', entitlementId: 'seats', amount: 5, dry_run: true },
        });
        expect(resultText(seats)).to.match(
          /^Dry run, nothing was done\. Would record 5 of seats; the count would become 5 of 1, so the call would be refused: Error 402: /,
        );
        expect(structured(seats).dry_run).to.deep.include({ would: 'fail', status: 402 });
        expect(await count('f1', 'api_calls')).to.equal(0);
        expect(await count('f1', 'seats')).to.equal(0);
        // A cap the call would pass: the dry run says so, and takes nothing from it.
        await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
          key_guardrails: { usage_caps: [{ entitlement_id: 'api_calls', amount: 10, period: 'day' }] },
        });
        const capped = await client.callTool({
          name: 'increment_usage',
          arguments: { namespaceId: 'f1', entitlementId: 'api_calls', dry_run: true },
        });
        expect(structured(capped).dry_run!.would).to.equal('succeed');
        const over = await client.callTool({
          name: 'add_usage_amount',
          arguments: { namespaceId: 'f1', entitlementId: 'api_calls', amount: 11, dry_run: true },
        });
        expect(resultText(over)).to.match(
          /the call would be refused: Error 403: Usage cap reached: .* 0 recorded today, 10 left, this call would record 11/,
        );
        const view = (await get(`/apps/${app.id}/mcp/settings`, testEnv().adminKey)).body.key_guardrails;
        expect(view.usage_caps[0]).to.include({ used: 0 });
        // Give the service time to deliver anything it had started: nothing was.
        await new Promise((r) => setTimeout(r, 300));
        expect(await sideEffects(app.id)).to.deep.equal(before);
        expect(receiver.received).to.have.length(0);
        // The real call does record (and the same count the dry run said).
        const real = await client.callTool({
          name: 'add_usage_amount',
          arguments: { namespaceId: 'f1', entitlementId: 'api_calls', amount: 5 },
        });
        expect(real.structuredContent).to.deep.equal({ entitlement: 'api_calls', count: 5 });
      } finally {
        await receiver.close();
      }
    });

    it('a catalog write and a delete: the would-be result, nothing changed, no event, delivery or workflow', async () => {
      const receiver = await startReceiver();
      try {
        await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] });
        const before = await sideEffects(app.id);
        const client = await connect();
        const create = await client.callTool({
          name: 'create_plan',
          arguments: { id: 'team', name: 'Team', dry_run: true },
        });
        expect(create.isError, resultText(create)).to.equal(false);
        expect(structured(create).dry_run).to.deep.include({ would: 'succeed', status: 201 });
        expect(structured(create).dry_run!.result).to.include({ id: 'team', name: 'Team' });
        expect((await get(`/apps/${app.id}/plans/team`, app.api_key)).status).to.equal(404);
        const dup = await client.callTool({
          name: 'create_plan',
          arguments: { id: 'pro', name: 'Pro', dry_run: true },
        });
        expect(structured(dup).dry_run).to.deep.include({ would: 'fail', status: 409 });
        expect(resultText(dup)).to.match(
          /^Dry run, nothing was done\. the call would be refused: Error 409: |^Dry run, nothing was done\. The call would be refused|would be refused: Error 409/,
        );
        const del = await client.callTool({ name: 'delete_plan', arguments: { planId: 'scale', dry_run: true } });
        expect(del.isError, resultText(del)).to.equal(false);
        expect(structured(del).dry_run!.would).to.equal('succeed');
        expect((await get(`/apps/${app.id}/plans/scale`, app.api_key)).status).to.equal(200);
        const delAccount = await client.callTool({
          name: 'delete_account',
          arguments: { namespaceId: 'a1', dry_run: true },
        });
        expect(structured(delAccount).dry_run!.would, resultText(delAccount)).to.equal('succeed');
        expect((await get(`/apps/${app.id}/namespaces/a1`, app.api_key)).status).to.equal(200);
        await new Promise((r) => setTimeout(r, 300));
        expect(await sideEffects(app.id)).to.deep.equal(before);
        expect(receiver.received).to.have.length(0);
        // The same call for real emits its event.
        const real = await client.callTool({ name: 'create_plan', arguments: { id: 'team', name: 'Team' } });
        expect(real.isError, resultText(real)).to.equal(false);
        expect(Number((await sideEffects(app.id)).events)).to.be.greaterThan(Number(before.events));
      } finally {
        await receiver.close();
      }
    });

    it('calls that reach the payment provider or a webhook URL are described, with their price checked against the spend cap', async () => {
      await createAccount(app, { id: 'f1', plan: 'free' });
      const receiver = await startReceiver();
      try {
        const hook = (await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] })).body;
        const before = await sideEffects(app.id);
        const client = await connect();
        const link = await client.callTool({
          name: 'create_upgrade_link',
          arguments: { namespaceId: 'f1', plan: 'pro', interval: 'year', dry_run: true },
        });
        expect(link.isError, resultText(link)).to.equal(false);
        expect(structured(link).dry_run).to.deep.include({ would: 'call', amount: 290, currency: 'USD' });
        expect(resultText(link)).to.match(
          /Would make a checkout link for account f1 to buy plan pro for 290 USD per year/,
        );
        const noPrice = await client.callTool({
          name: 'create_upgrade_link',
          arguments: { namespaceId: 'f1', plan: 'internal', dry_run: true },
        });
        expect(structured(noPrice).dry_run).to.deep.include({ would: 'fail', status: 409 });
        const change = await client.callTool({
          name: 'change_subscription',
          arguments: { namespaceId: 'f1', plan: 'pro', dry_run: true },
        });
        expect(structured(change).dry_run).to.deep.include({ would: 'fail', status: 404 });
        await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, {
          key_guardrails: { spend_cap: { amount: 50, currency: 'USD', period: 'day' } },
        });
        const capped = await client.callTool({
          name: 'create_upgrade_link',
          arguments: { namespaceId: 'f1', plan: 'scale', dry_run: true },
        });
        expect(resultText(capped)).to.match(
          /would be refused: Error 403: Spend cap reached: .* 0 started today, 50 left, this call would start 99/,
        );
        const test = await client.callTool({
          name: 'send_test_event',
          arguments: { webhookId: hook.id, dry_run: true },
        });
        expect(structured(test).dry_run!.would, resultText(test)).to.equal('call');
        await new Promise((r) => setTimeout(r, 300));
        expect(receiver.received).to.have.length(0);
        expect(await sideEffects(app.id)).to.deep.equal(before);
      } finally {
        await receiver.close();
      }
    });

    it('dry_run must be a boolean (400 as a tool error)', async () => {
      const client = await connect();
      const r = await client.callTool({
        name: 'increment_usage',
        arguments: { namespaceId: 'a1', entitlementId: 'api_calls', dry_run: 'yes' },
      });
      expect(resultText(r)).to.equal('Error 400: dry_run: expected true or false');
      expect(await count('a1', 'api_calls')).to.equal(0);
    });
  });

  describe('elicitation before destructive tools', () => {
    /** An SDK client that declares elicitation and answers each question as told. */
    async function asking(answer: (q: ElicitRequest['params']) => ElicitResult) {
      const client = new Client({ name: 'asking', version: '1' }, { capabilities: { elicitation: {} } });
      const asked: ElicitRequest['params'][] = [];
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked.push(req.params);
        return answer(req.params);
      });
      await client.connect(
        new StreamableHTTPClientTransport(mcpUrl(app.id), {
          requestInit: { headers: { Authorization: `Bearer ${app.api_key}` } },
        }),
      );
      clients.push(client);
      return { client, asked };
    }

    it('accepted: the person is asked what will be deleted, then it is', async () => {
      const { client, asked } = await asking(() => ({ action: 'accept', content: { confirm: true } }));
      const r = await client.callTool({ name: 'delete_plan', arguments: { planId: 'scale' } });
      expect(r.isError, resultText(r)).to.equal(false);
      expect(asked).to.have.length(1);
      expect(asked[0].message).to.match(
        /wants to run delete_plan \(.*\) with planId "scale" in app .* cannot be undone/,
      );
      expect((asked[0] as { requestedSchema: { required: string[] } }).requestedSchema.required).to.deep.equal([
        'confirm',
      ]);
      expect((await get(`/apps/${app.id}/plans/scale`, app.api_key)).status).to.equal(404);
      // Writes that are not destructive, and dry runs of destructive ones, are not asked.
      await client.callTool({ name: 'update_plan', arguments: { planId: 'pro', name: 'Pro 2' } });
      const dry = await client.callTool({ name: 'delete_plan', arguments: { planId: 'internal', dry_run: true } });
      expect(structured(dry).dry_run!.would, resultText(dry)).to.equal('succeed');
      expect(asked).to.have.length(1);
    });

    it('declined, cancelled or not confirmed: nothing is deleted and the result says why', async () => {
      for (const [answer, why] of [
        [{ action: 'decline' }, 'the person chose decline'],
        [{ action: 'cancel' }, 'the person chose cancel'],
        [{ action: 'accept', content: { confirm: false } }, 'the person did not tick confirm'],
      ] as [ElicitResult, string][]) {
        const { client, asked } = await asking(() => answer);
        const r = await client.callTool({ name: 'delete_account', arguments: { namespaceId: 'a1' } });
        expect(asked).to.have.length(1);
        expect(r.isError).to.equal(true);
        expect(resultText(r)).to.equal(
          `Not done: delete_account needs the person's confirmation and ${why}. Nothing was changed.`,
        );
        // Structured as any tool error (the SDK client checked it against the tool's output schema).
        expect(r.structuredContent).to.deep.equal({ error: resultText(r), status: 403, reason: 'not_confirmed' });
        expect((await get(`/apps/${app.id}/namespaces/a1`, app.api_key)).status).to.equal(200);
      }
      const [logged] = (await get(`/apps/${app.id}/mcp/calls?limit=1`, testEnv().adminKey)).body.data;
      expect(logged).to.include({ tool: 'delete_account', status: 403, is_error: true });
      // A client that did not declare elicitation is not asked (its host confirms by the destructive hint).
      const plain = await connect();
      const done = await plain.callTool({ name: 'delete_account', arguments: { namespaceId: 'a1' } });
      expect(done.isError, resultText(done)).to.equal(false);
      expect((await get(`/apps/${app.id}/namespaces/a1`, app.api_key)).status).to.equal(404);
    });
  });
});
