import { expect } from 'chai';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { get, patch } from '../helpers/http.js';
import { connectMcp, jsonSchemaValidatorOfTests, mcpPost, mcpUrl } from '../helpers/mcp.js';
import { signInOAuth } from '../helpers/oauth.js';
import { testEnv } from '../helpers/servers.js';
import { build as buildElements } from '../../packages/elements/build.js';

// The 2026-07-28 protocol (stateless core: no initialize, the version and client in each request's `_meta`,
// `server/discover`, Mcp-Method/Mcp-Name headers, cacheable lists) beside the 2025 versions, on the v2 SDK.

/** The official v2 SDK client, pinned to 2026-07-28 (it calls `server/discover`, never `initialize`). */
export async function connect2026(appId: string, token: string, name = 'v2-client') {
  const transport = new StreamableHTTPClientTransport(mcpUrl(appId), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client(
    { name, version: '2.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, jsonSchemaValidator: jsonSchemaValidatorOfTests },
  );
  await client.connect(transport);
  return client;
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
/** A 2026-07-28 request as it goes on the wire, with the headers a gateway routes on (overridable). */
const modern = (
  app: TestApp,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  token = app.api_key,
) => {
  const name = (params.name ?? params.uri) as string | undefined;
  return mcpPost(app.id, { jsonrpc: '2.0', id: 'r1', method, params: { ...params, _meta: META } }, token, {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(name ? { 'mcp-name': name } : {}),
    ...headers,
  });
};

describe('MCP 2026-07-28 on the v2 SDK', function () {
  this.timeout(60_000);
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp('Modern');
    await seedCatalog(app);
    await createAccount(app, { id: 'acme', plan: 'free' });
  });

  it('the v2 client pinned to 2026-07-28 connects, lists tools and calls one, with the key and with OAuth', async () => {
    const { accessToken } = await signInOAuth(app.id, { level: 'read' });
    for (const token of [app.api_key, accessToken]) {
      const client = await connect2026(app.id, token);
      try {
        expect(client.getNegotiatedProtocolVersion()).to.equal('2026-07-28');
        expect(client.getServerVersion()?.title).to.equal('offerkit: Modern');
        const { tools } = await client.listTools();
        const names = tools.map((t) => t.name);
        expect(names).to.include.members(['get_account', 'list_plans']);
        // A read connection lists only read tools; the key lists the core's writes too (the others by toolset, or
        // found by find_tools: test/api/mcp-toolsets.test.ts).
        expect(names).to.include.members(['find_tools', 'call_tool']);
        if (token === accessToken) expect(names).to.not.include('increment_usage');
        else expect(names).to.include.members(['increment_usage', 'create_upgrade_link']);
        const result = await client.callTool({ name: 'get_account', arguments: { namespaceId: 'acme' } });
        expect(result.isError).to.equal(false);
        expect((result.structuredContent as { id: string; plan: string }).plan).to.equal('free');
        // The spec's argument names and refusals hold in this era too.
        const bad = await client.callTool({ name: 'get_account', arguments: { accountId: 'acme' } });
        expect(bad.isError).to.equal(true);
        expect((bad.content as { text: string }[])[0].text).to.match(/^Error 400: Unknown argument `accountId`/);
        const { prompts } = await client.listPrompts();
        expect(prompts.map((p) => p.name)).to.include('investigate_account');
        const read = await client.readResource({ uri: 'offer://app' });
        expect(JSON.parse((read.contents[0] as { text: string }).text)).to.deep.equal({ id: app.id, name: 'Modern' });
      } finally {
        await client.close();
      }
    }
    // The key's calls are logged under a key session named from the request's `_meta` client info.
    const conns = await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey);
    expect(conns.body.map((c: { name: string }) => c.name)).to.include('v2-client');
    const calls = await get(`/apps/${app.id}/mcp/calls?limit=20`, testEnv().adminKey);
    expect(calls.body.data.filter((c: { tool: string }) => c.tool === 'get_account')).to.have.length(4);
  });

  it('the v1 client and raw 2025 requests are answered beside it, by the same app', async () => {
    const { client } = await connectMcp(app.id, { key: app.api_key });
    try {
      const result = await client.callTool({ name: 'get_account', arguments: { namespaceId: 'acme' } });
      expect(result.isError).to.equal(false);
    } finally {
      await client.close();
    }
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      const init = await mcpPost(
        app.id,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        },
        app.api_key,
      );
      expect(init.status, init.text).to.equal(200);
      expect(init.body.result.protocolVersion).to.equal(version);
    }
    // `server/discover` names only the revision that has it; the 2025 versions are reached through `initialize`.
    const discover = await modern(app, 'server/discover');
    expect(discover.status, discover.text).to.equal(200);
    expect(discover.body.result.supportedVersions).to.include('2026-07-28');
  });

  it('Mcp-Method and Mcp-Name must say what the body says: 400 with a JSON-RPC error under the request id', async () => {
    const call = { name: 'get_account', arguments: { namespaceId: 'acme' } };
    expect((await modern(app, 'tools/call', call)).status).to.equal(200);
    const cases: [string, Record<string, string>, RegExp][] = [
      ['another tool name', { 'mcp-name': 'delete_account' }, /Mcp-Name header names "delete_account"/],
      ['another method', { 'mcp-method': 'tools/list' }, /Mcp-Method header names tools\/list/],
    ];
    for (const [what, headers, message] of cases) {
      const r = await modern(app, 'tools/call', call, headers);
      expect(r.status, what).to.equal(400);
      expect(r.body.jsonrpc).to.equal('2.0');
      expect(r.body.id, what).to.equal('r1');
      expect(r.body.error.code, what).to.equal(-32020);
      expect(r.body.error.message, what).to.match(message);
    }
    // The 2026-07-28 revision requires them; a 2025 request may leave them out, but one that sends them is held to them.
    const without = await mcpPost(
      app.id,
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: META } },
      app.api_key,
      { 'mcp-protocol-version': '2026-07-28' },
    );
    expect(without.status).to.equal(400);
    expect(without.body.error.code).to.equal(-32020);
    const legacyCall = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: call };
    const v2025 = { 'mcp-protocol-version': '2025-11-25' };
    expect((await mcpPost(app.id, legacyCall, app.api_key, v2025)).status).to.equal(200);
    const ok = await mcpPost(app.id, legacyCall, app.api_key, {
      ...v2025,
      'mcp-method': 'tools/call',
      'mcp-name': 'get_account',
    });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.result.isError).to.equal(false);
    const mismatch = await mcpPost(app.id, legacyCall, app.api_key, { ...v2025, 'mcp-name': 'delete_account' });
    expect(mismatch.status).to.equal(400);
    expect(mismatch.body).to.deep.include({ jsonrpc: '2.0', id: 3 });
    expect(mismatch.body.error.code).to.equal(-32020);
    // Nothing was deleted on the strength of a header.
    expect((await get(`/apps/${app.id}/namespaces/acme`, app.api_key)).status).to.equal(200);
  });

  it('lists carry cache hints matching how often they change; data reads are not cached', async () => {
    await buildElements(); // the MCP App pages are built from the components' bundles
    const hint = async (method: string, params: Record<string, unknown> = {}) => {
      const r = await modern(app, method, params);
      expect(r.status, `${method}: ${r.text.slice(0, 300)}`).to.equal(200);
      expect(r.body.result, `${method}: ${r.text.slice(0, 300)}`).to.be.an('object');
      return { ttlMs: r.body.result.ttlMs, cacheScope: r.body.result.cacheScope };
    };
    // What a caller may call changes when an operator changes the MCP settings: a minute, for this caller only.
    expect(await hint('tools/list')).to.deep.equal({ ttlMs: 60_000, cacheScope: 'private' });
    expect(await hint('resources/list')).to.deep.equal({ ttlMs: 60_000, cacheScope: 'private' });
    expect(await hint('resources/templates/list')).to.deep.equal({ ttlMs: 60_000, cacheScope: 'private' });
    // The prompts change only with a release and are the same for everyone.
    expect(await hint('prompts/list')).to.deep.equal({ ttlMs: 3_600_000, cacheScope: 'public' });
    // The catalog, events and accounts change with every write: read fresh.
    expect(await hint('resources/read', { uri: 'offer://catalog' })).to.deep.equal({ ttlMs: 0, cacheScope: 'private' });
    // An MCP App page changes only with a release.
    expect(await hint('resources/read', { uri: 'ui://offerkit/usage-meter' })).to.deep.equal({
      ttlMs: 3_600_000,
      cacheScope: 'private',
    });
  });

  it('refusals stay JSON-RPC errors: the server turned off, an unknown tool, a batch; no credential is a 401', async () => {
    const unknown = await modern(app, 'tools/call', { name: 'nope', arguments: {} });
    expect(unknown.status).to.equal(200);
    expect(unknown.body.error.code).to.equal(-32602);
    const batch = await mcpPost(
      app.id,
      [{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }],
      app.api_key,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    );
    expect(batch.status).to.equal(400);
    expect(batch.body.error.code).to.equal(-32600);
    const none = await modern(app, 'tools/list', {}, {}, null as unknown as string);
    expect(none.status).to.equal(401);
    expect(none.headers.get('www-authenticate')).to.match(/resource_metadata=/);
    expect((await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { enabled: false })).status).to.equal(200);
    const off = await modern(app, 'tools/list');
    expect(off.status).to.equal(403);
    expect(off.body).to.deep.include({ jsonrpc: '2.0', id: 'r1' });
    expect(off.body.error.code).to.equal(-32000);
  });

  describe('asking the person before a destructive tool (input_required)', () => {
    /** A v2 client that declares elicitation and answers every question with `answer`. */
    async function asking(answer: { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, boolean> }) {
      const questions: string[] = [];
      const transport = new StreamableHTTPClientTransport(mcpUrl(app.id), {
        requestInit: { headers: { Authorization: `Bearer ${app.api_key}` } },
      });
      const client = new Client(
        { name: 'asking-v2', version: '2.0.0' },
        { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      client.setRequestHandler('elicitation/create', async (request) => {
        questions.push((request.params as { message: string }).message);
        return answer;
      });
      await client.connect(transport);
      return { client, questions };
    }
    const planExists = async (id: string) => (await get(`/apps/${app.id}/plans/${id}`, app.api_key)).status === 200;

    it('accepted: the person is asked what will be deleted, then it is; declined: nothing is deleted', async () => {
      const yes = await asking({ action: 'accept', content: { confirm: true } });
      try {
        const r = await yes.client.callTool({ name: 'delete_plan', arguments: { planId: 'internal' } });
        expect(r.isError, JSON.stringify(r.content)).to.equal(false);
        expect(yes.questions).to.have.length(1);
        expect(yes.questions[0]).to.match(
          /delete_plan .* with planId "internal" in app Modern\. This cannot be undone/,
        );
        expect(await planExists('internal')).to.equal(false);
        // A dry run is not asked about.
        const dry = await yes.client.callTool({ name: 'delete_plan', arguments: { planId: 'scale', dry_run: true } });
        expect(dry.isError).to.equal(false);
        expect(yes.questions).to.have.length(1);
      } finally {
        await yes.client.close();
      }
      const no = await asking({ action: 'decline' });
      try {
        const r = await no.client.callTool({ name: 'delete_plan', arguments: { planId: 'scale' } });
        expect(r.isError).to.equal(true);
        expect((r.content as { text: string }[])[0].text).to.match(
          /^Not done: delete_plan needs the person's confirmation/,
        );
        expect(r.structuredContent).to.deep.include({ status: 403, reason: 'not_confirmed' });
        expect(await planExists('scale')).to.equal(true);
      } finally {
        await no.client.close();
      }
    });

    it('a requestState is taken once and only for its own call; a forged one is refused', async () => {
      const meta = { ...META, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };
      const send = (params: Record<string, unknown>) =>
        mcpPost(
          app.id,
          { jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { ...params, _meta: meta } },
          app.api_key,
          { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': params.name as string },
        );
      const asked = await send({ name: 'delete_plan', arguments: { planId: 'scale' } });
      expect(asked.status, asked.text).to.equal(200);
      expect(asked.body.result.resultType).to.equal('input_required');
      const state = asked.body.result.requestState as string;
      const accept = { confirm: { action: 'accept', content: { confirm: true } } };
      // For another call (another plan), or altered: refused, nothing deleted.
      const other = await send({
        name: 'delete_plan',
        arguments: { planId: 'pro' },
        requestState: state,
        inputResponses: accept,
      });
      expect(other.body.error?.code, other.text).to.equal(-32602);
      expect(other.body.error.message).to.match(/issued for another tool call/);
      const forged = await send({
        name: 'delete_plan',
        arguments: { planId: 'scale' },
        requestState: `${state.slice(0, -4)}AAAA`,
        inputResponses: accept,
      });
      expect(forged.body.error, forged.text).to.not.equal(undefined);
      expect(await planExists('pro')).to.equal(true);
      expect(await planExists('scale')).to.equal(true);
      // The real answer works once; sent again, it is refused.
      const done = await send({
        name: 'delete_plan',
        arguments: { planId: 'scale' },
        requestState: state,
        inputResponses: accept,
      });
      expect(done.body.result?.isError, done.text).to.equal(false);
      expect(await planExists('scale')).to.equal(false);
      const again = await send({
        name: 'delete_plan',
        arguments: { planId: 'scale' },
        requestState: state,
        inputResponses: accept,
      });
      expect(again.body.result?.isError, again.text).to.equal(true);
      expect(again.body.result.content[0].text).to.match(/already used or came too late/);
    });
  });
});
