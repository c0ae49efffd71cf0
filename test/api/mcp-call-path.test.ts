import { expect } from 'chai';
import type { Pool, PoolClient } from 'pg';
import { poolOf } from '../../src/db/sql.js';
import { flushCalls, logCall } from '../../src/mcp/calls.js';
import { createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { get } from '../helpers/http.js';
import { mcpPost } from '../helpers/mcp.js';
import { testEnv } from '../helpers/servers.js';
import { postForm, signInOAuth } from '../helpers/oauth.js';

// What a read tool's call costs beyond its REST route, counted in statements (never in time): the same statements
// as the route, then the call log's insert, written after the answer with the calls queued meanwhile.

/** Records the statements the ORM's pool runs while `counting` is on (the pool's own and its clients'). */
async function statementLog() {
  const pool = (await poolOf(testEnv().deps.orm.em.fork())) as Pool & Record<string, unknown>;
  const seen: string[] = [];
  let counting = false;
  const textOf = (q: unknown) => (typeof q === 'string' ? q : ((q as { text?: string })?.text ?? String(q)));
  // The suite's in-process outbox relay polls the same pool meanwhile: its statements (and their transactions'
  // begin and commit) are not the request's.
  const background = /^(begin|commit|rollback)\b|\boutbox\b/i;
  const record = (q: unknown) => {
    const text = textOf(q).replace(/\s+/g, ' ').trim();
    if (counting && !background.test(text)) seen.push(text);
  };
  const wrapped = new WeakSet<PoolClient>();
  const query = pool.query;
  const connect = pool.connect;
  pool.query = function (this: Pool, ...args: unknown[]) {
    record(args[0]);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as never;
  pool.connect = async function (this: Pool, ...args: unknown[]) {
    const client = (await (connect as (...a: unknown[]) => Promise<PoolClient>).apply(this, args)) as PoolClient;
    if (!wrapped.has(client)) {
      wrapped.add(client);
      const own = client.query;
      client.query = function (this: PoolClient, ...a: unknown[]) {
        record(a[0]);
        return (own as (...x: unknown[]) => unknown).apply(this, a);
      } as never;
    }
    return client;
  } as never;
  return {
    async during(f: () => Promise<unknown>): Promise<string[]> {
      seen.length = 0;
      counting = true;
      try {
        await f();
      } finally {
        counting = false;
      }
      return [...seen];
    },
    restore() {
      pool.query = query;
      pool.connect = connect;
    },
  };
}

/** What a warm MCP call must not read: its caps, settings, connection, or the app for a key check. */
const MCP_LOOKUPS = /mcp_cap_counters|mcp_settings|mcp_connections|from "?apps"?\b/;

describe('MCP read tool call path', function () {
  this.timeout(60_000);
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp('Call path');
    await seedCatalog(app);
    await createAccount(app, { id: 'acc-1', plan: 'pro' });
  });

  const rest = () => get(`/apps/${app.id}/namespaces/acc-1/plan`, app.api_key);
  let calls = 0;
  const mcp = () => {
    calls++;
    return mcpPost(
      app.id,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_account_access', arguments: { namespaceId: 'acc-1' } },
      },
      app.api_key,
    );
  };

  it("runs its REST route's statements and no more (no caps, settings, connection, key check); the log is batched after", async () => {
    calls = 0;
    const log = await statementLog();
    try {
      // Warm: the app and its MCP settings are cached beside it.
      for (let i = 0; i < 2; i++) {
        expect((await rest()).status).to.equal(200);
        expect((await mcp()).status).to.equal(200);
      }
      await flushCalls(testEnv().deps.orm);
      let viaRest: string[] = [];
      let viaMcp: string[] = [];
      // Background work (the outbox relay, schedules) may run a statement meanwhile: the least of a few tries.
      const sameAs = (route: string[]) =>
        JSON.stringify(viaMcp.filter((s) => !/insert into mcp_calls/.test(s))) === JSON.stringify(route);
      const same = () => sameAs(viaRest);
      // A cached app or setting that expired on a loaded machine is read again by the next call, REST or MCP alike:
      // tried again too, since warm, the MCP call reads none of them.
      const warm = () => !MCP_LOOKUPS.test(viaMcp.join('\n'));
      // The call log's insert of an earlier call may land in the route's window on a loaded machine: not its own.
      const route = async () =>
        (await log.during(async () => expect((await rest()).status).to.equal(200))).filter(
          (s) => !/insert into mcp_calls/.test(s),
        );
      for (let i = 0; i < 5 && (i === 0 || !same() || !warm()); i++) {
        // The route's calls before and after the tool's: a cache that is confirmed every few seconds (the
        // credentials') is read again by whichever call comes first after that, so the tool's statements are
        // compared with the route's call that met the same caches.
        const before = await route();
        viaMcp = await log.during(async () => {
          const r = await mcp();
          expect(r.status, r.text).to.equal(200);
          expect(r.body.result.isError).to.equal(false);
        });
        const after = await route();
        viaRest = sameAs(before) ? before : after;
      }
      expect(viaRest.length).to.be.greaterThan(0);
      // Beside the route's statements, at most the call log's insert (written after the answer, maybe before the
      // test's client has read it).
      const logInserts = viaMcp.filter((s) => /insert into mcp_calls/.test(s));
      expect(logInserts.length).to.be.at.most(1);
      expect(
        viaMcp.filter((s) => !/insert into mcp_calls/.test(s)),
        `the tool's statements:\n${viaMcp.join('\n')}\nthe route's:\n${viaRest.join('\n')}`,
      ).to.deep.equal(viaRest);
      expect(viaMcp.join('\n')).to.not.match(MCP_LOOKUPS);
      // Calls logged close together (here, at once) go in one insert.
      const { orm, logger } = testEnv().deps;
      const logged = await log.during(async () => {
        for (let i = 0; i < 3; i++) {
          calls++;
          logCall(orm, logger, {
            appId: app.id,
            connectionId: null,
            tool: 'get_account_access',
            args: { namespaceId: 'acc-1' },
            status: 200,
            isError: false,
            result: '{}',
            durationMs: 1,
          });
        }
        await flushCalls(orm);
      });
      expect(logged.filter((s) => /insert into mcp_calls/.test(s))).to.have.length(1);
    } finally {
      log.restore();
    }
    const logged = await get(`/apps/${app.id}/mcp/calls?limit=100`, testEnv().adminKey);
    expect(logged.body.data.filter((c: { tool: string }) => c.tool === 'get_account_access')).to.have.length(calls);
  });

  it('answers the JSON the SDK would: the text is the route JSON, the structured content the same value', async () => {
    const r = await mcp();
    const route = (await rest()).body;
    expect(r.headers.get('content-type')).to.match(/^application\/json/);
    expect(Object.keys(r.body)).to.deep.equal(['jsonrpc', 'id', 'result']);
    expect(Object.keys(r.body.result)).to.deep.equal(['content', 'structuredContent', 'isError']);
    expect(JSON.parse(r.body.result.content[0].text)).to.deep.equal(r.body.result.structuredContent);
    expect(r.body.result.structuredContent.plan).to.deep.equal(route.plan);
    // A list is structured under `data`, its text the list itself.
    const list = await mcpPost(
      app.id,
      { jsonrpc: '2.0', id: 'l', method: 'tools/call', params: { name: 'list_plans', arguments: {} } },
      app.api_key,
    );
    expect(list.body.id).to.equal('l');
    expect(list.body.result.structuredContent.data).to.deep.equal(JSON.parse(list.body.result.content[0].text));
  });

  it('with an OAuth access token, the same statements as with the key: the token and its connection are kept', async () => {
    const { accessToken } = await signInOAuth(app.id, { level: 'read' });
    const viaToken = () =>
      mcpPost(
        app.id,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'get_account_access', arguments: { namespaceId: 'acc-1' } },
        },
        accessToken,
      );
    const log = await statementLog();
    try {
      // Warm: the app, its settings, the token's check and the connection's state are kept beside the app (and the
      // connection's "last used" is written at most once a minute).
      for (let i = 0; i < 2; i++) expect((await viaToken()).status).to.equal(200);
      let viaRest: string[] = [];
      let viaOAuth: string[] = [];
      const same = () =>
        JSON.stringify(viaOAuth.filter((s) => !/insert into mcp_calls/.test(s))) === JSON.stringify(viaRest);
      for (let i = 0; i < 5 && (i === 0 || !same()); i++) {
        // The call log's insert of an earlier call may land in the route's window on a loaded machine: not its own.
        viaRest = (await log.during(async () => expect((await rest()).status).to.equal(200))).filter(
          (s) => !/insert into mcp_calls/.test(s),
        );
        viaOAuth = await log.during(async () => {
          const r = await viaToken();
          expect(r.status, r.text).to.equal(200);
          expect(r.body.result.isError).to.equal(false);
        });
      }
      expect(viaOAuth.filter((s) => !/insert into mcp_calls/.test(s))).to.deep.equal(viaRest);
      // (The call log's insert, written after an answer, checks its app exists: not the request's.)
      expect(viaOAuth.filter((s) => !/insert into mcp_calls/.test(s)).join('\n')).to.not.match(
        /oauth_tokens|mcp_connections|mcp_settings|from "?apps"?\b/,
      );
    } finally {
      log.restore();
    }
    // Revoked: refused on the very next call (the check kept above is dropped before the revocation answers).
    const conns = await get(`/apps/${app.id}/mcp/connections`, testEnv().adminKey);
    const oauth = conns.body.find((c: { kind: string }) => c.kind === 'oauth');
    const revoked = await postForm('/oauth/revoke', { token: accessToken, client_id: oauth.client_id });
    expect(revoked.status).to.equal(200);
    expect((await viaToken()).status).to.equal(401);
  });
});
