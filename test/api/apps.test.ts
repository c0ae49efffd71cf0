import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { mintAccountToken } from '../../src/http/account-token.js';
import { createAccount, createTestApp, purchase, seedCatalog } from '../helpers/factories.js';
import { call, del, get, patch, post, type Res } from '../helpers/http.js';
import { mcpPost, mcpUrl } from '../helpers/mcp.js';
import { pkce } from '../helpers/oauth.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /apps', () => {
  it('creates an app with a secret and a publishable key (admin)', async () => {
    const res = await post('/apps', testEnv().adminKey, { name: 'Acme', plan: 'scale' });
    expect(res.status).to.equal(201);
    expect(res.body.id).to.match(/^app_/);
    expect(res.body.api_key).to.match(/^key_/);
    expect(res.body.public_key).to.match(/^pub_/);
    expect(res.body).to.include({ name: 'Acme', plan: 'scale', checkout_url: null });
    expect(res.body.created_at).to.match(ISO_MS);
  });
  it('401 for an app key or no credential', async () => {
    const app = await createTestApp();
    expect((await post('/apps', app.api_key, { name: 'x' })).status).to.equal(401);
    expect((await post('/apps', null, { name: 'x' })).body).to.deep.equal({ error: 'Unauthorized' });
  });
  it('400 naming the field when name is missing or empty', async () => {
    const missing = await post('/apps', testEnv().adminKey, {});
    expect(missing.status).to.equal(400);
    expect(missing.body).to.deep.equal({ error: 'name: is required' });
    const empty = await post('/apps', testEnv().adminKey, { name: '  ' });
    expect(empty.status).to.equal(400);
    expect(empty.body.error).to.match(/^name: /);
  });
});

describe('GET /apps/:appId', () => {
  it('returns the record with keys and checkout_url for the secret key and the admin key', async () => {
    const app = await createTestApp('Readable');
    for (const token of [app.api_key, testEnv().adminKey]) {
      const res = await get(`/apps/${app.id}`, token);
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        id: app.id,
        name: 'Readable',
        api_key: app.api_key,
        public_key: app.public_key,
        checkout_url: null,
      });
    }
  });
  it('401 for the publishable key, an account token, and another app key', async () => {
    const app = await createTestApp();
    const other = await createTestApp();
    const token = mintAccountToken(app.id, 'u1', app.api_key, new Date(Date.now() + 60_000));
    for (const t of [app.public_key, token, other.api_key, other.public_key, 'key_nope', 'garbage']) {
      const res = await get(`/apps/${app.id}`, t);
      expect(res.status, t).to.equal(401);
      expect(res.body).to.deep.equal({ error: 'Unauthorized' });
    }
  });
  it('404 for the admin key on an unknown app; 401 for an app key (nothing leaks)', async () => {
    const app = await createTestApp();
    expect((await get('/apps/app_missing', testEnv().adminKey)).body).to.deep.equal({ error: 'App not found' });
    expect((await get('/apps/app_missing', app.api_key)).status).to.equal(401);
  });
});

describe('PATCH /apps/:appId', () => {
  it('merges name and checkout_url; key fields are ignored (the keys do not change)', async () => {
    const app = await createTestApp('Before');
    const res = await patch(`/apps/${app.id}`, app.api_key, {
      checkout_url: 'https://acme.example/pricing',
      api_key: 'key_mine',
      public_key: 'pub_mine',
    });
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({
      id: app.id,
      name: 'Before',
      checkout_url: 'https://acme.example/pricing',
      api_key: app.api_key,
      public_key: app.public_key,
    });
    // The old keys still work and the sent ones name nothing.
    expect((await get(`/apps/${app.id}`, app.api_key)).body).to.include({ public_key: app.public_key });
    expect((await get(`/apps/${app.id}`, 'key_mine')).status).to.equal(401);
    expect((await get(`/apps/${app.id}/plans/pricing`, app.public_key)).status).to.equal(200);
    // What a client that read the app sends back: the whole record (the keys alone change nothing either).
    const read = (await get(`/apps/${app.id}`, app.api_key)).body;
    const { id: _id, created_at: _created, ...record } = read;
    const back = await patch(`/apps/${app.id}`, app.api_key, { ...record, name: 'After' });
    expect(back.status, back.text).to.equal(200);
    expect(back.body).to.deep.equal({ ...read, name: 'After' });
    const keysOnly = await patch(`/apps/${app.id}`, app.api_key, { api_key: 42, public_key: null });
    expect(keysOnly.status, keysOnly.text).to.equal(200);
    expect(keysOnly.body).to.include({ api_key: app.api_key, public_key: app.public_key, name: 'After' });
    const cleared = await patch(`/apps/${app.id}`, app.api_key, { checkout_url: null });
    expect(cleared.body.checkout_url).to.equal(null);
  });
  it('any other unknown field is still a 400 naming it, and nothing changes (key fields sent with it or not)', async () => {
    const app = await createTestApp('Strict');
    const withId = await patch(`/apps/${app.id}`, app.api_key, {
      name: 'Changed',
      api_key: 'key_mine',
      id: 'app_other',
      created_at: '2020-01-01T00:00:00.000Z',
    });
    expect(withId.status).to.equal(400);
    expect(withId.body.error).to.equal('body: unknown fields id, created_at');
    const typo = await patch(`/apps/${app.id}`, app.api_key, { nmae: 'Changed' });
    expect(typo.body).to.deep.equal({ error: 'body: unknown field nmae' });
    expect((await get(`/apps/${app.id}`, app.api_key)).body).to.include({ name: 'Strict', api_key: app.api_key });
  });
  it('the OpenAPI document says the key fields are ignored', async () => {
    const doc = (await get('/openapi.json')).body;
    const op = doc.paths['/apps/{appId}'].patch;
    expect(op.description).to.match(/Key fields \(`api_key`, `public_key`\) are ignored/);
    const body = op.requestBody.content['application/json'].schema;
    const schema = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
    for (const key of ['api_key', 'public_key']) {
      expect(schema.properties[key], key).to.include({ deprecated: true });
      expect(schema.properties[key].description, key).to.match(/^Ignored/);
    }
    expect(schema.additionalProperties).to.equal(false);
  });
  it('400 for a checkout_url that is not an http(s) URL', async () => {
    const app = await createTestApp();
    const res = await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'javascript:alert(1)' });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('checkout_url: must be an http(s) URL');
  });
});

describe('DELETE /apps/:appId', () => {
  it('deletes the app; its keys stop working', async () => {
    const app = await createTestApp();
    const res = await del(`/apps/${app.id}`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ deleted: true, id: app.id });
    expect((await get(`/apps/${app.id}`, app.api_key)).status).to.equal(401);
    expect((await get(`/apps/${app.id}`, testEnv().adminKey)).status).to.equal(404);
  });
});

/** Rows of `appId` in every table that has an `app_id` column (read from the catalog, so a new table counts too). */
async function rowsOfApp(appId: string): Promise<Record<string, number>> {
  const em = testEnv().deps.orm.em.fork();
  const tables = await sql<{ table_name: string }>(
    em,
    `select c.table_name from information_schema.columns c
       join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = current_schema() and c.column_name = 'app_id' and t.table_type = 'BASE TABLE'
      order by 1`,
  );
  const rows: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [{ n }] = await sql<{ n: number }>(em, `select count(*)::int as n from "${table_name}" where app_id = $1`, [
      appId,
    ]);
    if (n > 0) rows[table_name] = n;
  }
  const [{ n }] = await sql<{ n: number }>(em, 'select count(*)::int as n from apps where id = $1', [appId]);
  if (n > 0) rows.apps = n;
  return rows;
}

describe('DELETE /apps/:appId removes everything the app owns', function () {
  this.timeout(90_000);

  it(
    'an app with a catalog, accounts with usage, an offer bought, webhooks, MCP and more: ' +
      'one delete, no row left in any table with an app_id',
    async () => {
      const app = await createTestApp('Everything');
      const base = `/apps/${app.id}`;
      const key = app.api_key;
      const admin = testEnv().adminKey;
      const ok = async (res: Promise<Res>, status = [200, 201]) => {
        const r = await res;
        expect(status, r.text).to.include(r.status);
        return r.body;
      };
      const receiver = await startReceiver();
      try {
        await ok(post(`${base}/webhooks`, key, { url: receiver.url, events: ['*'], description: 'Everything' }));
        await seedCatalog(app);
        // The references that the cascades from apps alone did not untangle: an incentive with an entitlement limit
        // and an add-on, and an account owning an add-on.
        await ok(
          post(`${base}/incentives`, key, {
            id: 'partner',
            name: 'Partner deal',
            entitlements: [{ id: 'api_calls', max: 5000 }],
            addons: ['storage'],
          }),
        );
        await ok(
          call('POST', `${base}/namespaces`, {
            token: key,
            body: { id: 'ada', plan: 'pro', incentive: 'partner' },
            headers: { 'Idempotency-Key': 'create-ada' },
          }),
        );
        await createAccount(app, { id: 'bob', plan: 'free' });
        await ok(post(`${base}/namespaces/bob/addons`, key, { id: 'storage' }));
        for (const account of ['ada', 'bob']) await ok(post(`${base}/namespaces/${account}/usage/api_calls/add`, key));
        await ok(post(`${base}/namespaces/ada/usage/seats/reservations`, key, { amount: 1 }));
        // An offer bought through the provider: offer, checkout, subscription, provider connection, account extras.
        await purchase(app, 'ada');
        await ok(post(`${base}/analytics/reports`, key, { name: 'Weekly', interval: '7d' }));
        await ok(post(`${base}/cancel-flows`, key, { status: 'active' }));
        await ok(post(`${base}/cancel-sessions`, key, { account: 'ada' }));
        await ok(call('PUT', `${base}/agent/threads/t1`, { token: admin, body: { user_id: 'u1', messages: [] } }));
        await ok(call('PATCH', `${base}/mcp/settings`, { token: admin, body: { access_level: 'read' } }));
        const init = await mcpPost(
          app.id,
          {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              protocolVersion: '2025-06-18',
              capabilities: {},
              clientInfo: { name: 'delete-test', version: '1' },
            },
          },
          key,
        );
        const session = init.headers.get('Mcp-Session-Id')!;
        await mcpPost(
          app.id,
          { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'count_accounts', arguments: {} } },
          key,
          { 'Mcp-Session-Id': session },
        );
        const client = await ok(post('/oauth/register', null, { redirect_uris: ['http://127.0.0.1:8123/cb'] }));
        const authorize = new URLSearchParams({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: 'http://127.0.0.1:8123/cb',
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
          resource: mcpUrl(app.id).toString(),
        });
        await ok(get(`/oauth/authorize?${authorize}`), [302]);
        // Every delivery done, so no delivery workflow is still running when the app goes.
        await eventually(async () => {
          const hook = (await get(`${base}/webhooks`, key)).body[0];
          return hook.stats.total > 0 && hook.stats.pending === 0;
        });

        const before = await rowsOfApp(app.id);
        expect(Object.keys(before)).to.include.members([
          'apps',
          'plans',
          'entitlements',
          'addons',
          'incentives',
          'plan_entitlements',
          'plan_addons',
          'incentive_entitlements',
          'incentive_addons',
          'accounts',
          'account_addons',
          'usage_counters',
          'usage_events',
          'usage_reservations',
          'idempotency_keys',
          'offers',
          'checkouts',
          'subscriptions',
          'payment_connections',
          'events',
          'webhook_endpoints',
          'webhook_deliveries',
          'analytics_reports',
          'cancel_flows',
          'cancel_sessions',
          'agent_threads',
          'mcp_settings',
          'mcp_connections',
          'mcp_calls',
          'oauth_requests',
        ]);

        const res = await del(base, key);
        expect(res.status, res.text).to.equal(200);
        expect(res.body).to.deep.equal({ deleted: true, id: app.id });
        expect(await rowsOfApp(app.id)).to.deep.equal({});
        expect((await get(base, admin)).status).to.equal(404);
      } finally {
        await receiver.close();
      }
    },
  );
});

describe('POST /apps/:appId/keys/regenerate', () => {
  it('replaces the secret key; the old key and every account token stop at once', async () => {
    const app = await createTestApp();
    const token = mintAccountToken(app.id, 'u1', app.api_key, new Date(Date.now() + 60_000));
    const res = await post(`/apps/${app.id}/keys/regenerate`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body.api_key).to.match(/^key_/).and.not.equal(app.api_key);
    expect((await get(`/apps/${app.id}`, app.api_key)).status).to.equal(401);
    expect((await get(`/apps/${app.id}`, res.body.api_key)).status).to.equal(200);
    // The token was valid before (see auth tests); after regeneration it verifies against nothing.
    const { verifyAccountToken } = await import('../../src/http/account-token.js');
    expect(verifyAccountToken(token, app.id, app.api_key)).to.not.equal(null);
    expect(verifyAccountToken(token, app.id, res.body.api_key)).to.equal(null);
  });
});

describe('POST /apps/:appId/public-key/regenerate', () => {
  it('replaces the publishable key and leaves the secret key alone', async () => {
    const app = await createTestApp();
    const res = await post(`/apps/${app.id}/public-key/regenerate`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body.public_key).to.match(/^pub_/).and.not.equal(app.public_key);
    const read = await get(`/apps/${app.id}`, app.api_key);
    expect(read.body.public_key).to.equal(res.body.public_key);
  });
  it('401 with the publishable key itself', async () => {
    const app = await createTestApp();
    expect((await call('POST', `/apps/${app.id}/public-key/regenerate`, { token: app.public_key })).status).to.equal(
      401,
    );
  });
});
