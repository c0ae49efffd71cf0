import { expect } from 'chai';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { routes } from '../../src/routes.js';
import { toolsOf } from '../../src/mcp/tools.js';
import { CORE_TOOLS, TOOLSETS } from '../../src/mcp/toolsets.js';
import { createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { call, get, patch } from '../helpers/http.js';
import { mcpPost, mcpUrl, TOOLS_LIST } from '../helpers/mcp.js';
import { signInOAuth } from '../helpers/oauth.js';
import { testEnv } from '../helpers/servers.js';

// Toolsets and discovery (issue 43, item 3): tools/list names the discovery tools, the core tools and the chosen
// toolsets' tools; every tool the caller may call stays reachable (find_tools describes it, tools/call and call_tool
// call it), and switch-offs and levels hold whichever way a tool is reached.

type Listed = { name: string; title: string; description: string; inputSchema: unknown; outputSchema?: unknown };
const DISCOVERY = ['find_tools', 'call_tool'];
const ROUTE_TOOLS = toolsOf(routes);
/** The core tools, in the route table's order (the list's). */
const CORE = ROUTE_TOOLS.filter((t) => CORE_TOOLS.includes(t.name)).map((t) => t.name);

const listed = async (app: TestApp, token: string, headers: Record<string, string> = {}, query = '') => {
  const res = query
    ? await call('POST', `/apps/${app.id}/mcp${query}`, {
        token,
        body: TOOLS_LIST,
        headers: { Accept: 'application/json, text/event-stream', ...headers },
      })
    : await mcpPost(app.id, TOOLS_LIST, token, headers);
  expect(res.status, res.text).to.equal(200);
  return res.body.result.tools as Listed[];
};
const names = (tools: Listed[]) => tools.map((t) => t.name);
let nextId = 10;
/** A `tools/call` over raw JSON-RPC: the result (a tool result, or the JSON-RPC error). */
const callTool = async (app: TestApp, token: string, name: string, args: Record<string, unknown>) => {
  const res = await mcpPost(
    app.id,
    { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } },
    token,
  );
  expect(res.status, res.text).to.equal(200);
  return res.body as {
    result?: { isError: boolean; content: { text: string }[]; structuredContent?: Record<string, unknown> };
    error?: { code: number; message: string };
  };
};
const settings = (app: TestApp, body: Record<string, unknown>) =>
  patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, body);

describe('MCP toolsets and discovery', function () {
  this.timeout(90_000);
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp('Toolsets');
    await seedCatalog(app);
    await createAccount(app, { id: 'acme', plan: 'free' });
  });

  it('by default lists the discovery tools and the core tools, each toolset by choice of the request', async () => {
    expect(names(await listed(app, app.api_key))).to.deep.equal([...DISCOVERY, ...CORE]);
    // The query parameter and the header choose alike; `all` is every tool; empty is the core alone.
    const viaQuery = names(await listed(app, app.api_key, {}, '?toolsets=webhooks,analytics'));
    const viaHeader = names(await listed(app, app.api_key, { 'X-MCP-Toolsets': 'webhooks, analytics' }));
    expect(viaQuery).to.deep.equal(viaHeader);
    const chosen = ROUTE_TOOLS.filter((t) => ['webhooks', 'analytics'].includes(t.toolset)).map((t) => t.name);
    expect(viaHeader).to.include.members([...DISCOVERY, ...CORE_TOOLS, ...chosen]);
    expect(viaHeader).to.have.length(DISCOVERY.length + CORE_TOOLS.length + chosen.length);
    expect(names(await listed(app, app.api_key, { 'X-MCP-Toolsets': 'all' }))).to.have.length(
      DISCOVERY.length + ROUTE_TOOLS.length,
    );
    expect(names(await listed(app, app.api_key, { 'X-MCP-Toolsets': '' }))).to.deep.equal([...DISCOVERY, ...CORE]);
    // An unknown toolset is refused, naming it and the toolsets there are.
    const bad = await mcpPost(app.id, TOOLS_LIST, app.api_key, { 'X-MCP-Toolsets': 'catalog,billingz' });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.code).to.equal(-32600);
    expect(bad.body.error.message).to.include('"billingz"').and.include(TOOLSETS.join(', '));
  });

  it('the app chooses its toolsets in the MCP settings (a 400 names an unknown one); a request chooses over it', async () => {
    expect((await get(`/apps/${app.id}/mcp/settings`, testEnv().adminKey)).body.toolsets).to.deep.equal([]);
    const set = await settings(app, { toolsets: ['catalog'] });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.toolsets).to.deep.equal(['catalog']);
    const catalog = ROUTE_TOOLS.filter((t) => t.toolset === 'catalog').map((t) => t.name);
    expect(names(await listed(app, app.api_key))).to.include.members(catalog);
    expect(names(await listed(app, app.api_key, { 'X-MCP-Toolsets': 'app' }))).to.deep.equal([
      ...DISCOVERY,
      ...ROUTE_TOOLS.filter((t) => CORE_TOOLS.includes(t.name) || t.toolset === 'app').map((t) => t.name),
    ]);
    const refused = await settings(app, { toolsets: ['catalog', 'nope'] });
    expect(refused.status).to.equal(400);
    expect(refused.body.error).to.match(/^toolsets\.1: /);
    // Back to none: the default list again.
    expect((await settings(app, { toolsets: [] })).body.toolsets).to.deep.equal([]);
    expect(names(await listed(app, app.api_key))).to.deep.equal([...DISCOVERY, ...CORE]);
  });

  it("an OAuth connection's own toolsets (set by an operator) replace the app's; null goes back to them", async () => {
    const { accessToken } = await signInOAuth(app.id, { level: 'write' });
    const connections = (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body as {
      id: string;
      kind: string;
      toolsets: string[] | null;
    }[];
    const conn = connections.find((c) => c.kind === 'oauth')!;
    expect(conn.toolsets).to.equal(null);
    await settings(app, { toolsets: ['analytics'] });
    expect(names(await listed(app, accessToken))).to.include('get_usage_timeseries');
    const changed = await patch(`/apps/${app.id}/mcp/connections/${conn.id}`, testEnv().adminKey, {
      toolsets: ['webhooks'],
    });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body.toolsets).to.deep.equal(['webhooks']);
    const now = names(await listed(app, accessToken));
    expect(now).to.include('list_webhooks').and.not.include('get_usage_timeseries');
    // Only what the connection may call is listed: delete_webhook needs Full access.
    expect(now).not.to.include('delete_webhook');
    // The request's choice still comes first.
    expect(names(await listed(app, accessToken, { 'X-MCP-Toolsets': 'analytics' }))).to.include('get_usage_timeseries');
    const reset = await patch(`/apps/${app.id}/mcp/connections/${conn.id}`, testEnv().adminKey, { toolsets: null });
    expect(reset.body.toolsets).to.equal(null);
    expect(names(await listed(app, accessToken)))
      .to.include('get_usage_timeseries')
      .and.not.include('list_webhooks');
    // A key session chooses per request.
    await mcpPost(
      app.id,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'keyed', version: '1' } },
      },
      app.api_key,
    );
    const session = (
      (await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey)).body as typeof connections
    ).find((c) => c.kind === 'secret_key')!;
    const refused = await patch(`/apps/${app.id}/mcp/connections/${session.id}`, testEnv().adminKey, {
      toolsets: ['catalog'],
    });
    expect(refused.status).to.equal(400);
    expect(refused.body.error).to.match(/^toolsets: a key session chooses its toolsets per request/);
  });

  it('no capability is lost: every route tool is listed or described by find_tools, and callable both ways', async () => {
    const all = (await listed(app, app.api_key, { 'X-MCP-Toolsets': 'all' })).filter(
      (t) => !DISCOVERY.includes(t.name),
    );
    expect(names(all)).to.deep.equal(ROUTE_TOOLS.map((t) => t.name));
    const shown = names(await listed(app, app.api_key));
    const index = (await callTool(app, app.api_key, 'find_tools', {})).result!;
    expect(index.isError).to.equal(false);
    const sets = index.structuredContent!.toolsets as { name: string; listed: boolean; tools: string[] }[];
    expect(sets.map((s) => s.name)).to.deep.equal([...TOOLSETS].filter((s) => sets.some((x) => x.name === s)));
    const indexed = sets.flatMap((s) => s.tools.map((line) => line.split(':')[0]));
    expect([...indexed].sort()).to.deep.equal(ROUTE_TOOLS.map((t) => t.name).sort());
    const unlisted = all.filter((t) => !shown.includes(t.name));
    expect(unlisted.length).to.be.above(50);
    for (let i = 0; i < unlisted.length; i += 8) {
      const batch = unlisted.slice(i, i + 8);
      const found = (await callTool(app, app.api_key, 'find_tools', { names: names(batch) })).result!;
      const described = found.structuredContent!.tools as (Listed & { toolset: string; listed: boolean })[];
      // The full definition, as tools/list gives it when the tool is listed, with its toolset.
      for (const t of batch) {
        const { toolset, listed: isListed, ...definition } = described.find((d) => d.name === t.name)!;
        expect(definition, t.name).to.deep.equal(t);
        expect(isListed, t.name).to.equal(false);
        expect(toolset).to.equal(ROUTE_TOOLS.find((r) => r.name === t.name)!.toolset);
      }
    }
    // Callable, directly and through call_tool: each reaches its own argument check (nothing runs).
    for (const t of unlisted) {
      const direct = (await callTool(app, app.api_key, t.name, { not_an_argument: 1 })).result!;
      const proxied = (
        await callTool(app, app.api_key, 'call_tool', { name: t.name, arguments: { not_an_argument: 1 } })
      ).result!;
      expect(direct.isError, t.name).to.equal(true);
      expect(direct.content[0].text, t.name).to.match(
        new RegExp(`^Error 400: Unknown argument \`not_an_argument\`: ${t.name} takes`),
      );
      expect(proxied, t.name).to.deep.equal(direct);
    }
    // A real call through call_tool answers as the tool does.
    const plans = (await callTool(app, app.api_key, 'call_tool', { name: 'list_entitlements' })).result!;
    expect(plans).to.deep.equal((await callTool(app, app.api_key, 'list_entitlements', {})).result);
    expect(plans.isError).to.equal(false);
  });

  it('find_tools finds by words and toolset; call_tool refuses what it cannot call, and logs the tool called', async () => {
    const found = (await callTool(app, app.api_key, 'find_tools', { query: 'delete plan' })).result!;
    expect((found.structuredContent!.tools as Listed[])[0].name).to.equal('delete_plan');
    const webhooks = (await callTool(app, app.api_key, 'find_tools', { toolset: 'webhooks' })).result!;
    expect(names(webhooks.structuredContent!.tools as Listed[])).to.include('retry_webhook_delivery');
    expect(webhooks.structuredContent!.more).to.equal(1);
    const bad = (await callTool(app, app.api_key, 'find_tools', { toolset: 'nope' })).result!;
    expect(bad.content[0].text).to.match(/^Error 400: toolset: expected one of accounts, catalog/);
    const missing = (await callTool(app, app.api_key, 'find_tools', { names: ['no_such_tool'] })).result!;
    expect(missing.content[0].text).to.match(/^Error 404: No tool you may call is named no_such_tool/);

    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /^Error 400: name: is required/],
      [{ name: 'no_such_tool' }, /^Error 404: Unknown tool no_such_tool: find_tools names/],
      [{ name: 'call_tool', arguments: {} }, /^Error 400: name: call_tool calls another tool/],
      [{ name: 'get_plan', arguments: [] }, /^Error 400: arguments: expected an object/],
      [{ name: 'get_plan', planId: 'pro' }, /^Error 400: Unknown argument `planId`: call_tool takes/],
    ];
    for (const [args, text] of cases) {
      const r = (await callTool(app, app.api_key, 'call_tool', args)).result!;
      expect(r.isError, JSON.stringify(args)).to.equal(true);
      expect(r.content[0].text, JSON.stringify(args)).to.match(text);
    }
    // A dry run through call_tool is the tool's dry run.
    const dry = (
      await callTool(app, app.api_key, 'call_tool', {
        name: 'delete_plan',
        arguments: { planId: 'internal', dry_run: true },
      })
    ).result!;
    expect(dry.structuredContent!.dry_run).to.include({ would: 'succeed' });
    expect((await get(`/apps/${app.id}/plans/internal`, app.api_key)).status).to.equal(200);
    // The log names the tool that ran.
    const log = (await get(`/apps/${app.id}/mcp/calls?limit=100`, testEnv().adminKey)).body.data as {
      tool: string;
    }[];
    expect(log.map((c) => c.tool))
      .to.include('delete_plan')
      .and.include('find_tools');
  });

  it('an OAuth connection finds and calls only what its level and the switches allow, however it calls', async () => {
    await settings(app, { tool_overrides: { list_entitlements: false } });
    const { accessToken } = await signInOAuth(app.id, { level: 'read' });
    const shown = names(await listed(app, accessToken));
    expect(shown).to.deep.equal([...DISCOVERY, 'list_plans', 'get_account', 'get_account_usage']);
    const index = (await callTool(app, accessToken, 'find_tools', {})).result!.structuredContent!.toolsets as {
      tools: string[];
    }[];
    const indexed = index.flatMap((s) => s.tools.map((line) => line.split(':')[0]));
    expect(indexed).to.include('list_addons').and.not.include('list_entitlements').and.not.include('create_plan');
    const describe = (await callTool(app, accessToken, 'find_tools', { names: ['create_plan'] })).result!;
    expect(describe.content[0].text).to.match(/^Error 404: No tool you may call is named create_plan/);
    for (const [name, args, why] of [
      ['create_plan', { id: 'x', name: 'X' }, /^Error 403: Connection level too low: create_plan needs write/],
      ['list_entitlements', {}, /^Error 403: Tool list_entitlements is switched off/],
    ] as const) {
      const direct = (await callTool(app, accessToken, name, args)).result!;
      const proxied = (await callTool(app, accessToken, 'call_tool', { name, arguments: args })).result!;
      expect(direct.content[0].text).to.match(why);
      expect(proxied).to.deep.equal(direct);
    }
    expect((await callTool(app, accessToken, 'call_tool', { name: 'list_addons' })).result!.isError).to.equal(false);
  });

  it('the v2 client (2026-07-28) calls a tool it was not listed, with the definition find_tools gave it', async () => {
    const transport = new StreamableHTTPClientTransport(mcpUrl(app.id), {
      requestInit: { headers: { Authorization: `Bearer ${app.api_key}` } },
    });
    const client = new Client(
      { name: 'v2-finder', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).not.to.include('get_plan');
      expect(tools.every((t) => typeof t.title === 'string')).to.equal(true);
      const found = await client.callTool({ name: 'find_tools', arguments: { names: ['get_plan'] } });
      const [definition] = (found.structuredContent as { tools: never[] }).tools;
      const result = await client.callTool(
        { name: 'get_plan', arguments: { planId: 'pro' } },
        { toolDefinition: definition },
      );
      expect(result.isError).to.equal(false);
      expect((result.structuredContent as { id: string }).id).to.equal('pro');
    } finally {
      await client.close();
    }
  });
});
