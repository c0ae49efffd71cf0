import { expect } from 'chai';
import { createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { get, patch } from '../helpers/http.js';
import { mcpPost } from '../helpers/mcp.js';
import { testEnv } from '../helpers/servers.js';

// One SDK server per process answers every request (src/mcp/server.ts): requests must not see each other's
// context, and the app's MCP settings, kept beside the app in the credential cache, must never be stale.
const callTool = (id: number | string, name: string, args: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('MCP server shared by every request', function () {
  this.timeout(60_000);
  let a: TestApp;
  let b: TestApp;
  beforeEach(async () => {
    [a, b] = [await createTestApp('Shared A'), await createTestApp('Shared B')];
    for (const [app, plan] of [
      [a, 'free'],
      [b, 'pro'],
    ] as const) {
      await seedCatalog(app);
      await createAccount(app, { id: 'same-id', plan });
    }
  });

  it('concurrent calls with the same JSON-RPC id, from two apps, each get their own answer under their id', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const app = i % 2 ? b : a;
        return mcpPost(app.id, callTool(7, 'get_account', { namespaceId: 'same-id' }), app.api_key).then((r) => ({
          app,
          r,
        }));
      }),
    );
    for (const { app, r } of answers) {
      expect(r.status, r.text).to.equal(200);
      expect(r.body.id).to.equal(7);
      expect(r.body.result.isError).to.equal(false);
      expect(r.body.result.structuredContent.plan).to.equal(app === a ? 'free' : 'pro');
    }
  });

  it('a batch answers each request under its own id, in order; initialize names the app it was sent to', async () => {
    const batch = await mcpPost(
      a.id,
      [callTool('x', 'get_account', { namespaceId: 'same-id' }), callTool(3, 'get_app', {})],
      a.api_key,
    );
    expect(batch.status, batch.text).to.equal(200);
    expect(batch.body.map((r: { id: unknown }) => r.id)).to.deep.equal(['x', 3]);
    expect(batch.body[1].result.structuredContent.name).to.equal('Shared A');
    const init = (app: TestApp) =>
      mcpPost(
        app.id,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
        },
        app.api_key,
      );
    const [ia, ib] = await Promise.all([init(a), init(b)]);
    expect(ia.body.result.serverInfo.title).to.equal('offerkit: Shared A');
    expect(ib.body.result.serverInfo.title).to.equal('offerkit: Shared B');
    expect(ia.body.result.protocolVersion).to.equal('2025-06-18');
  });

  it('a settings change applies to the very next call (the cached settings are dropped before the change answers)', async () => {
    const list = () => mcpPost(a.id, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, a.api_key);
    // Twice, so the settings are cached beside the app before they change.
    expect((await list()).status).to.equal(200);
    expect((await list()).status).to.equal(200);
    const off = await patch(`/apps/${a.id}/mcp/settings`, testEnv().adminKey, { enabled: false });
    expect(off.status, off.text).to.equal(200);
    expect((await list()).status).to.equal(403);
    const on = await patch(`/apps/${a.id}/mcp/settings`, testEnv().adminKey, { enabled: true });
    expect(on.status, on.text).to.equal(200);
    expect((await list()).status).to.equal(200);
  });

  it('the call log, written after the answer, is complete when listed', async () => {
    await Promise.all(Array.from({ length: 12 }, (_, i) => mcpPost(a.id, callTool(i, 'get_app', {}), a.api_key)));
    const calls = await get(`/apps/${a.id}/mcp/calls?limit=100`, testEnv().adminKey);
    expect(calls.status, calls.text).to.equal(200);
    expect(calls.body.data.filter((c: { tool: string }) => c.tool === 'get_app')).to.have.length(12);
  });

  it('a tools/call the fast path does not take goes through the SDK: malformed params are -32602', async () => {
    const bad = await mcpPost(a.id, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 5 } }, a.api_key);
    expect(bad.status, bad.text).to.equal(200);
    expect(bad.body.id).to.equal(9);
    // Params the method's request schema refuses: JSON-RPC's Invalid params (the SDK alone would say -32603).
    expect(bad.body.error.code).to.equal(-32602);
    // Extra params (here a progress token in _meta and an unknown field) still answer the call.
    const extra = await mcpPost(
      a.id,
      {
        jsonrpc: '2.0',
        id: 10,
        method: 'tools/call',
        params: { name: 'get_app', arguments: {}, _meta: { progressToken: 1 }, other: true },
      },
      a.api_key,
    );
    expect(extra.body.result.structuredContent.name, extra.text).to.equal('Shared A');
  });

  it('a request with members JSON-RPC does not define is -32600 under its id, never an answer left out', async () => {
    // Found by the contract fuzzer: the SDK's strict request schema took this for no request and answered nothing.
    const odd = { jsonrpc: '2.0', id: '', method: '0', params: {}, '': { '': {} } };
    const batch = await mcpPost(a.id, [odd, callTool(2, 'get_app', {})], a.api_key);
    expect(batch.status, batch.text).to.equal(200);
    expect(batch.body).to.have.length(2);
    expect(batch.body[0]).to.include({ id: '' });
    expect(batch.body[0].error.code).to.equal(-32600);
    expect(batch.body[0].error.message).to.match(/Unrecognized key/);
    expect(batch.body[1].result.structuredContent.name).to.equal('Shared A');
  });

  it('refuses a second message beside initialize and an unknown protocol version, as the SDK transport does', async () => {
    const two = await mcpPost(
      a.id,
      [
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {} } },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      ],
      a.api_key,
    );
    expect(two.status).to.equal(400);
    expect(two.body.error.code).to.equal(-32600);
    const old = await mcpPost(a.id, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, a.api_key, {
      'mcp-protocol-version': '1999-01-01',
    });
    expect(old.status).to.equal(400);
    expect(old.body.error.message).to.match(/Unsupported protocol version: 1999-01-01/);
  });
});
