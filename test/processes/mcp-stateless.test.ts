import { expect } from 'chai';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { connectProvider, createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { del, get, patch } from '../helpers/http.js';
import { postForm, signInOAuth } from '../helpers/oauth.js';
import { serviceEnv, startApi, stopped, waitForListening, type Started } from '../helpers/processes.js';
import { freePort, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

// Any API process answers any MCP request: the suite's in-process API (A) and a second API process (B) on the same
// database, behind a "load balancer" that sends each request to the next process in turn. B's public URL is A's, as
// behind a real balancer, so a token issued at one is for the server URL of both. Each process keeps an access
// token's check beside the app (src/oauth/tokens.ts): a revocation answered by one process holds at once in both.

describe('MCP across two API processes (stateless)', function () {
  this.timeout(180_000);
  let b: Started;
  let baseB: string;
  let app: TestApp;
  const baseA = () => testEnv().baseUrl;

  before(async function () {
    this.timeout(120_000);
    const port = await freePort();
    b = startApi(
      serviceEnv(port, {
        ADMIN_API_KEY: 'adm_mcp_stateless',
        PUBLIC_API_URL: testEnv().baseUrl,
        PAYPAL_BASE_URL: testEnv().paypal.baseUrl,
      }),
    );
    baseB = `http://127.0.0.1:${port}`;
    await waitForListening(b);
  });
  after(async () => {
    if (b) await stopped(b.child);
  });
  beforeEach(async () => {
    app = await createTestApp('Stateless');
    await seedCatalog(app);
    await createAccount(app, { id: 'acme', plan: 'free' });
  });

  /** A fetch that sends each request to A and B in turn, counting what each answered. */
  function roundRobin() {
    const served = { A: 0, B: 0 };
    let next = 0;
    const fetchRR = async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : input);
      const to = next++ % 2 === 0 ? 'A' : 'B';
      served[to]++;
      const base = new URL(to === 'A' ? baseA() : baseB);
      url.host = base.host;
      return fetch(url, init);
    };
    return { served, fetch: fetchRR };
  }

  /** One raw tools/call on a process, with a bearer token (2025-11-25, as most clients speak today). */
  const callOn = (base: string, token: string) =>
    fetch(`${base}/apps/${app.id}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_account', arguments: { namespaceId: 'acme' } },
      }),
    });

  it('the v2 client on 2026-07-28 and the v1 client on 2025-11-25 work with requests spread over both', async () => {
    const { accessToken } = await signInOAuth(app.id, { level: 'write' });
    for (const token of [app.api_key, accessToken]) {
      const rr = roundRobin();
      const transport = new StreamableHTTPClientTransport(new URL(`${baseA()}/apps/${app.id}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
        fetch: rr.fetch,
      });
      const client = new Client(
        { name: 'spread', version: '2' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(transport);
      try {
        expect(client.getNegotiatedProtocolVersion()).to.equal('2026-07-28');
        expect((await client.listTools()).tools.map((t) => t.name)).to.include('increment_usage');
        for (let i = 0; i < 4; i++) {
          const r = await client.callTool({
            name: 'increment_usage',
            arguments: { namespaceId: 'acme', entitlementId: 'api_calls' },
          });
          expect(r.isError, JSON.stringify(r.content)).to.equal(false);
        }
      } finally {
        await client.close();
      }
      expect(rr.served.A).to.be.at.least(3);
      expect(rr.served.B).to.be.at.least(3);
    }
    // Eight increments, whichever process took them.
    const count = await get(`/apps/${app.id}/namespaces/acme/usage/api_calls`, app.api_key);
    expect(count.body.count, count.text).to.equal(8);

    // The 2025 era: the session `initialize` made on one process is known to the other (it is a row).
    const rr = roundRobin();
    const v1 = new V1Client({ name: 'spread-v1', version: '1' });
    await v1.connect(
      new V1Transport(new URL(`${baseA()}/apps/${app.id}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${app.api_key}` } },
        fetch: rr.fetch,
      }),
    );
    try {
      for (let i = 0; i < 3; i++) {
        const r = await v1.callTool({ name: 'get_account', arguments: { namespaceId: 'acme' } });
        expect(r.isError).to.equal(false);
      }
    } finally {
      await v1.close();
    }
    expect(rr.served.B).to.be.at.least(2);
    // Logged under that session, whichever process took the call (each process writes its log 25 ms after a call).
    const session = await eventually(async () => {
      const conns = await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey);
      const found = conns.body.find((c: { name: string }) => c.name === 'spread-v1');
      return found?.calls_last_7_days === 3 ? found : undefined;
    }, 10_000);
    expect(session.kind).to.equal('secret_key');
  });

  /** A token used on both processes first, so each keeps its check. */
  async function warmToken() {
    const signedIn = await signInOAuth(app.id, { level: 'write' });
    for (let i = 0; i < 2; i++)
      for (const base of [baseA(), baseB]) {
        const r = await callOn(base, signedIn.accessToken);
        expect(r.status, await r.clone().text()).to.equal(200);
      }
    return signedIn;
  }

  it('a revoked token is refused at once by the process that revoked it and by the other', async () => {
    const { accessToken, clientId } = await warmToken();
    const revoked = await postForm('/oauth/revoke', { token: accessToken, client_id: clientId });
    expect(revoked.status).to.equal(200);
    for (const base of [baseB, baseA()]) {
      const r = await callOn(base, accessToken);
      expect(r.status, base).to.equal(401);
      expect(r.headers.get('www-authenticate')).to.match(/error="invalid_token"/);
    }
  });

  it('a connection removed, a refreshed token and a lowered level hold at once on both processes', async () => {
    // Removed by an operator (on A): cut off on B too.
    const removed = await warmToken();
    const conns = await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey);
    const conn = conns.body.find((c: { kind: string }) => c.kind === 'oauth');
    expect((await del(`/apps/${app.id}/mcp/connections/${conn.id}`, testEnv().adminKey)).status).to.equal(200);
    for (const base of [baseB, baseA()]) expect((await callOn(base, removed.accessToken)).status, base).to.equal(401);

    // Refreshed (on B): the old access token stops working on A at once, the new one works on both.
    const refreshed = await warmToken();
    const res = await fetch(`${baseB}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshed.refreshToken,
        client_id: refreshed.clientId,
      }),
    });
    const pair = (await res.json()) as { access_token: string };
    expect(res.status, JSON.stringify(pair)).to.equal(200);
    for (const base of [baseA(), baseB]) {
      expect((await callOn(base, refreshed.accessToken)).status, base).to.equal(401);
      expect((await callOn(base, pair.access_token)).status, base).to.equal(200);
    }

    // The app's access level lowered to read (on A): the write tool is refused on B at once, as a tool error.
    const lowered = await warmToken();
    expect((await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { access_level: 'read' })).status).to.equal(
      200,
    );
    const write = await fetch(`${baseB}/apps/${app.id}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${lowered.accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'increment_usage', arguments: { namespaceId: 'acme', entitlementId: 'api_calls' } },
      }),
    });
    const body = (await write.json()) as { result: { isError: boolean; content: { text: string }[] } };
    expect(body.result.isError).to.equal(true);
    expect(body.result.content[0].text).to.match(/^Error 403/);
  });

  it('a task made on one process is read and cancelled on the other (its state is in PostgreSQL and Temporal)', async () => {
    await connectProvider(app);
    const task = async (base: string, method: string, params: Record<string, unknown>) => {
      const name = (method === 'tools/call' ? params.name : params.taskId) as string;
      const res = await fetch(`${base}/apps/${app.id}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${app.api_key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
          'mcp-name': name,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method,
          params: {
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'tasks', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
            },
          },
        }),
      });
      const body = (await res.json()) as { result: Record<string, any>; error?: unknown };
      if (!body.result) throw new Error(`${method} on ${base}: ${JSON.stringify(body)}`);
      return body.result;
    };
    const created = await task(baseA(), 'tools/call', {
      name: 'create_upgrade_link',
      arguments: { namespaceId: 'acme', plan: 'pro' },
    });
    expect(created).to.include({ resultType: 'task', status: 'working' });
    expect((await task(baseB, 'tasks/get', { taskId: created.taskId })).status).to.equal('working');
    expect(await task(baseB, 'tasks/cancel', { taskId: created.taskId })).to.deep.include({ resultType: 'complete' });
    expect((await task(baseA(), 'tasks/get', { taskId: created.taskId })).status).to.equal('cancelled');
  });
});
