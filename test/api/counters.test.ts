// Counters that bound what anonymous or public callers can make the service do (src/security/throttle.ts and
// admission.ts, src/oauth/client-metadata.ts): checkouts with the publishable key, OAuth authorization requests,
// metadata-document fetches, failed grants, forged provider notifications and the demo's test sends. Each test
// drives a counter past its limit, then shows the unrelated valid credential or caller still works. The stack runs
// behind a declared proxy (TRUST_PROXY=1), so each test's client addresses are its own.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Config } from '../../src/config.js';
import { markWorkspaceReadOnly } from '../../src/apps/apps.service.js';
import { sql } from '../../src/db/sql.js';
import type { Deps } from '../../src/deps.js';
import { demoReceiverUrl } from '../../src/dev/demo-receiver.js';
import { routes } from '../../src/routes.js';
import { people } from '../../src/people/better-auth.js';
import { billingApp, createTestApp, seededApp } from '../helpers/factories.js';
import { call, post } from '../helpers/http.js';
import { mountRoutes } from '../helpers/mount.js';
import { approveWith, pkce, postForm, REDIRECT } from '../helpers/oauth.js';
import { forwardingProxy } from '../helpers/proxy.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';

const em = () => testEnv().deps.orm.em.fork();
const clearCounters = () => sql(em(), 'delete from rate_limits');

/** The real stack behind one declared proxy, with these settings (the config object stays the test's to change). */
async function mountWith(over: Partial<Config>, deps: Partial<Deps> = {}) {
  const config = { ...testEnv().deps.config, TRUST_PROXY: 1, ...over } as Config;
  return { config, ...(await mountRoutes(routes, { ...deps, config })) };
}
const from = (ip: string, more: Record<string, string> = {}) => ({ 'X-Forwarded-For': ip, ...more });

/** An authorization request as a browser sends it, for a client and (by default) a fresh PKCE challenge. */
const authorize = (base: string, ip: string, clientId: string, appId: string) =>
  call(
    'GET',
    `/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      resource: `${testEnv().baseUrl}/apps/${appId}/mcp`,
    })}`,
    { base, headers: from(ip) },
  );

/** A registered client signed in to the app (on the shared stack): its id and refresh token. */
async function connected(appId: string) {
  const client = (await post('/oauth/register', null, { redirect_uris: [REDIRECT], client_name: 'Counters' })).body;
  const { verifier, challenge } = pkce();
  const url = new URL(
    `${testEnv().baseUrl}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: `${testEnv().baseUrl}/apps/${appId}/mcp`,
    })}`,
  );
  const code = await approveWith('read')(url);
  const tokens = await postForm('/oauth/token', {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: client.client_id,
  });
  expect(tokens.status, JSON.stringify(tokens.body)).to.equal(200);
  return { clientId: client.client_id as string, refresh: tokens.body.refresh_token as string };
}

const refresh = (base: string, ip: string, clientId: string, token: string) =>
  call('POST', '/oauth/token', {
    base,
    body: { grant_type: 'refresh_token', refresh_token: token, client_id: clientId },
    headers: from(ip),
  });

describe('counters: what anonymous and public callers can make the service do', function () {
  this.timeout(90_000);
  beforeEach(clearCounters);
  after(clearCounters);

  it('checkouts with the publishable key count checkouts made: refused and invalid requests use up nothing', async () => {
    const m = await mountWith({ PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT: 2, PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS: 50 });
    try {
      const { app } = await billingApp({
        offer: { id: 'launch', name: 'Launch', plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }] },
      });
      const open = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
        call('POST', `/apps/${app.id}/offers/launch/checkout`, {
          base: m.base,
          token: app.public_key,
          body: { plan: 'pro', interval: 'month', account: 'carol', ...body },
          headers: from('203.0.113.50', headers),
        });
      // The issue's ten invalid requests for carol, and refusals of other kinds: none of them made a checkout.
      for (let i = 0; i < 10; i++) expect((await open({ interval: 'fortnight' })).status).to.equal(400);
      expect((await open({ plan: 'scale' })).status).to.equal(409);
      expect((await open({ if_subscribed: 'change' })).status).to.equal(403);
      // Carol's two checkouts; a replay of the first (its Idempotency-Key) is no new checkout either.
      const first = await open({}, { 'Idempotency-Key': 'carol-1' });
      expect(first.status, first.text).to.equal(201);
      const replay = await open({}, { 'Idempotency-Key': 'carol-1' });
      expect(replay.headers.get('idempotent-replayed')).to.equal('true');
      expect((await open({})).status).to.equal(201);
      const third = await open({});
      expect(third.status).to.equal(429);
      expect(third.body.error).to.match(/^Too many checkouts opened for this account/);
      // Another account from the same address, and carol through the seller's backend, are not held to carol's.
      expect((await open({ account: 'dave' })).status).to.equal(201);
      const backend = await call('POST', `/apps/${app.id}/offers/launch/checkout`, {
        base: m.base,
        token: app.api_key,
        body: { plan: 'pro', interval: 'month', account: 'carol' },
        headers: from('203.0.113.50'),
      });
      expect(backend.status, backend.text).to.equal(201);
    } finally {
      await m.close();
    }
  });

  it('GET /oauth/authorize: per address, an HTML page past the limit; keys and grants from there still work', async () => {
    const m = await mountWith({ OAUTH_AUTHORIZE_LIMIT: 3 });
    try {
      const { app } = await seededApp();
      const { clientId, refresh: token } = await connected(app.id);
      const ip = '203.0.113.60';
      for (let i = 0; i < 3; i++) expect((await authorize(m.base, ip, clientId, app.id)).status).to.equal(302);
      const page = await authorize(m.base, ip, clientId, app.id);
      expect(page.status).to.equal(429);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      expect(Number(page.headers.get('retry-after'))).to.be.within(1, 900);
      expect(page.text).to.include('Too many sign-ins were started from this address');
      // Another address starts its own; valid credentials from the throttled one are untouched.
      expect((await authorize(m.base, '203.0.113.61', clientId, app.id)).status).to.equal(302);
      expect((await refresh(m.base, ip, clientId, token)).status).to.equal(200);
      expect(
        (await call('GET', `/apps/${app.id}/plans`, { base: m.base, token: app.api_key, headers: from(ip) })).status,
      ).to.equal(200);
    } finally {
      await m.close();
    }
  });

  it('metadata documents: fetched at most N per address, cached by URL (failures too), and the clients capped', async () => {
    const m = await mountWith({ OAUTH_METADATA_FETCH_LIMIT: 2, OAUTH_METADATA_CLIENT_LIMIT: 0 });
    // Each path is the document of a client of its own; `/missing/...` answers 404. Every fetch is recorded.
    const served: string[] = [];
    const documents = http.createServer((req, res) => {
      served.push(req.url!);
      if (req.url!.startsWith('/missing/')) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ client_id: `${origin}${req.url}`, client_name: 'Doc', redirect_uris: [REDIRECT] }));
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', () => resolve()));
    const origin = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    const url = (p: string) => `${origin}${p}`;
    const rows = async (ids: string[]) =>
      (await sql<{ id: string }>(em(), 'select id from oauth_clients where id = any($1)', [ids])).map((r) => r.id);
    try {
      const { app } = await seededApp();
      const ip = '203.0.113.70';
      const stamp = Date.now();
      const [c1, c2, c3] = [1, 2, 3].map((i) => url(`/c${i}-${stamp}.json`));
      expect((await authorize(m.base, ip, c1, app.id)).status).to.equal(302);
      expect((await authorize(m.base, ip, c2, app.id)).status).to.equal(302);
      // The issue's flood: a third new document from that address is not fetched, and makes no client.
      const page = await authorize(m.base, ip, c3, app.id);
      expect(page.status).to.equal(429);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      expect(Number(page.headers.get('retry-after'))).to.be.within(1, 3600);
      expect(served).to.have.length(2);
      expect(await rows([c1, c2, c3])).to.have.members([c1, c2]);
      // A document already fetched is used from its row (in every process) while fresh: no fetch, no count.
      expect((await authorize(m.base, ip, c1, app.id)).status).to.equal(302);
      expect(served).to.have.length(2);
      // Another address has its own allowance.
      expect((await authorize(m.base, '203.0.113.71', c3, app.id)).status).to.equal(302);
      expect(served).to.have.length(3);
      // A failing URL is remembered: asked again at once, it is not fetched again.
      const missing = url(`/missing/${stamp}.json`);
      expect((await authorize(m.base, '203.0.113.72', missing, app.id)).status).to.equal(400);
      const again = await authorize(m.base, '203.0.113.72', missing, app.id);
      expect(again.status).to.equal(400);
      expect(again.text).to.include('answered HTTP 404');
      expect(served).to.have.length(4);

      // The cap: at most this many clients made from documents wait for a first sign-in, in all.
      const [waiting] = await sql<{ n: number }>(
        em(),
        'select count(*)::int as n from oauth_clients where signed_in_at is null and metadata_fresh_until is not null',
      );
      m.config.OAUTH_METADATA_CLIENT_LIMIT = waiting.n;
      const capped = await authorize(m.base, '203.0.113.73', url(`/c4-${stamp}.json`), app.id);
      expect(capped.status).to.equal(503);
      expect(capped.headers.get('retry-after')).to.equal('3600');
      expect(capped.text).to.include('Too many new clients are waiting for their first sign-in');
      expect(served).to.have.length(4);
      // Clients that exist still sign in, and a registered client is not a metadata client.
      expect((await authorize(m.base, '203.0.113.73', c2, app.id)).status).to.equal(302);
      const { clientId } = await connected(app.id);
      expect((await authorize(m.base, '203.0.113.73', clientId, app.id)).status).to.equal(302);
    } finally {
      documents.closeAllConnections();
      await new Promise((resolve) => documents.close(resolve));
      await m.close();
    }
  });

  it('POST /oauth/token: failed grants per address get 429 past the limit; a valid grant from there never', async () => {
    const m = await mountWith({ OAUTH_TOKEN_FAILURE_LIMIT: 3 });
    try {
      const { app } = await seededApp();
      const { clientId, refresh: token } = await connected(app.id);
      const ip = '203.0.113.80';
      for (let i = 0; i < 3; i++) {
        const res = await refresh(m.base, ip, clientId, `mcp_rt_made_up_${i}`);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('invalid_grant');
      }
      const blocked = await refresh(m.base, ip, clientId, 'mcp_rt_made_up_more');
      expect(blocked.status).to.equal(429);
      expect(blocked.body.error).to.equal('too_many_requests');
      expect(blocked.body.error_description).to.match(/^Too many failed grants from this address/);
      expect(Number(blocked.headers.get('retry-after'))).to.be.within(1, 900);
      // An unknown client counts too (invalid_client).
      expect((await refresh(m.base, ip, 'mcpc_unknown', 'x')).status).to.equal(429);
      // The connection's own refresh token, from the same address.
      const ok = await refresh(m.base, ip, clientId, token);
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.body.refresh_token).to.match(/^mcp_rt_/);
      // Malformed requests are no failed grants: another address's invalid_request leaves its counter alone.
      for (let i = 0; i < 4; i++)
        expect(
          (
            await call('POST', '/oauth/token', {
              base: m.base,
              body: { grant_type: 'authorization_code', client_id: clientId },
              headers: from('203.0.113.81'),
            })
          ).body.error,
        ).to.equal('invalid_request');
    } finally {
      await m.close();
    }
  });

  it('forged provider notifications: refused before the provider is asked past the limit; genuine ones go on', async () => {
    const paypal = await forwardingProxy(testEnv().paypal.baseUrl);
    const m = await mountWith({ NOTIFICATION_FAILURE_LIMIT: 3, PAYPAL_BASE_URL: paypal.url });
    const app = await createTestApp();
    try {
      // Connected through this stack: the provider notifies it (from loopback, no forwarded address).
      const [[client_id, client_secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
      const connect = await call('PUT', `/apps/${app.id}/payments`, {
        base: m.base,
        token: app.api_key,
        body: { client_id, client_secret, env: 'sandbox' },
      });
      expect(connect.status, connect.text).to.equal(200);
      const forge = () =>
        call('POST', `/payments/webhooks/${app.id}`, {
          base: m.base,
          body: { id: 'WH-forged', event_type: 'BILLING.SUBSCRIPTION.ACTIVATED', resource: { id: 'I-forged' } },
          headers: from('203.0.113.90', {
            'paypal-transmission-id': 'forged',
            'paypal-transmission-time': new Date().toISOString(),
            'paypal-transmission-sig': 'bm9wZQ==',
            'paypal-auth-algo': 'SHA256withRSA',
            'paypal-cert-url': 'https://evil.example/cert',
          }),
        });
      const before = paypal.count;
      for (let i = 0; i < 3; i++) expect((await forge()).status).to.equal(401);
      expect(paypal.count, 'each forged one was checked with the provider').to.be.greaterThan(before);
      const asked = paypal.count;
      const refused = await forge();
      expect(refused.status).to.equal(429);
      expect(refused.body.error).to.match(/^Too many notifications that failed verification/);
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 900);
      expect(paypal.count, 'past the limit, the provider is not asked').to.equal(asked);
      // Without PayPal's signature headers nothing is asked at all.
      const bare = await call('POST', `/payments/webhooks/${app.id}`, {
        base: m.base,
        body: { event_type: 'X' },
        headers: from('203.0.113.91'),
      });
      expect(bare.status).to.equal(401);
      expect(paypal.count).to.equal(asked);

      // A genuine notification, from the provider's own address, is verified and accepted.
      await testEnv().paypal.notify(client_id, 'BILLING.SUBSCRIPTION.UPDATED', { id: `I-genuine-${app.id}` });
      const note = testEnv().paypal.sent.find(
        (s) => s.url === `${m.base}/payments/webhooks/${app.id}` && s.event.resource.id === `I-genuine-${app.id}`,
      );
      expect(note, 'the notification reached this stack').to.not.equal(undefined);
      expect(note!.status).to.equal(200);
    } finally {
      await call('DELETE', `/apps/${app.id}/payments`, { base: m.base, token: app.api_key });
      await m.close();
      await paypal.close();
    }
  });

  it('test sends and retries on the read-only demo are bounded per person, and nobody else uses theirs', async () => {
    const m = await mountWith({ DEMO_SEND_LIMIT: 3 });
    const p = await people(testEnv().deps);
    const users: string[] = [];
    const orgId = `ro_counters_${Date.now()}`;
    try {
      const app = await createTestApp();
      const endpoint = await post(`/apps/${app.id}/webhooks`, testEnv().adminKey, {
        url: demoReceiverUrl(testEnv().baseUrl, testEnv().adminKey, app.id),
        events: ['*'],
      });
      expect(endpoint.status, endpoint.text).to.equal(201);
      await post('/orgs', testEnv().adminKey, { id: orgId, app_ids: [app.id] });
      for (const change of await markWorkspaceReadOnly(em(), orgId)) await testEnv().deps.credentials.confirm(change);
      const cookies: string[] = [];
      for (let i = 0; i < 2; i++) {
        const email = `demo-visitor-${i}-${Date.now()}@example.com`;
        const password = 'correct horse battery staple';
        const { user } = await p.auth.api.signUpEmail({ body: { name: `Visitor ${i}`, email, password } });
        users.push(user.id);
        await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, 'viewer')`, [
          orgId,
          user.id,
        ]);
        const signedIn = await call('POST', '/api/auth/sign-in/email', {
          base: m.base,
          body: { email, password },
          headers: { Origin: m.base },
        });
        cookies.push(
          signedIn.headers
            .getSetCookie()
            .map((c) => c.split(';')[0])
            .join('; '),
        );
      }
      const send = (cookie: string) =>
        call('POST', `/console/api/apps/${app.id}/webhooks/${endpoint.body.id}/test`, {
          base: m.base,
          body: {},
          headers: { Cookie: cookie, Origin: m.base },
        });
      const burst = await Promise.all(Array.from({ length: 6 }, () => send(cookies[0])));
      expect(burst.filter((r) => r.status === 200)).to.have.length(3);
      const refused = burst.filter((r) => r.status === 429);
      expect(refused).to.have.length(3);
      expect(refused[0].body.error).to.match(/^Too many test sends and retries on this read-only app/);
      expect(Number(refused[0].headers.get('retry-after'))).to.be.within(1, 600);
      // The other visitor's sends are theirs; an ordinary write is still the read-only 403.
      expect((await send(cookies[1])).status).to.equal(200);
      const write = await call('POST', `/console/api/apps/${app.id}/plans`, {
        base: m.base,
        body: { id: 'x', name: 'X' },
        headers: { Cookie: cookies[1], Origin: m.base },
      });
      expect(write.status).to.equal(403);
    } finally {
      await p.pool.query(`delete from orgs where id = $1`, [orgId]);
      await p.pool.query(`delete from workspace_members where user_id = any($1)`, [users]);
      for (const table of ['people_sessions', 'people_credentials'])
        await p.pool.query(`delete from ${table} where "userId" = any($1)`, [users]);
      await p.pool.query(`delete from people_users where id = any($1)`, [users]);
      await m.close();
    }
  });

  it('every answer under /console/api is Cache-Control: no-store, errors included', async () => {
    for (const path of ['/console/api/me', '/console/api/apps/app_none/plans', '/console/api/nothing-here']) {
      const res = await call('GET', path, { headers: { Origin: testEnv().baseUrl } });
      expect(res.headers.get('cache-control'), `${path} (${res.status})`).to.equal('no-store');
    }
    const setup = await call('POST', '/console/api/setup', { body: {}, headers: { Origin: testEnv().baseUrl } });
    expect(setup.headers.get('cache-control')).to.equal('no-store');
  });

  it('[::127.0.0.1] and the other IPv6 spellings of an IPv4 address are what that address is to the URL policy', async () => {
    const m = await mountWith({ WEBHOOKS_ALLOW_PRIVATE_URLS: false });
    try {
      const app = await createTestApp();
      for (const [host, shown] of [
        ['[::127.0.0.1]', '::7f00:1 is not: it stands for 127.0.0.1, loopback'],
        ['[::ffff:0:127.0.0.1]', '::ffff:0:7f00:1 is not: it stands for 127.0.0.1, loopback'],
        ['[64:ff9b::10.0.0.1]', '64:ff9b::a00:1 is not: it stands for 10.0.0.1, private'],
        ['[::ffff:127.0.0.1]', '::ffff:7f00:1 is not'],
      ]) {
        const res = await call('POST', `/apps/${app.id}/webhooks`, {
          base: m.base,
          token: app.api_key,
          body: { url: `http://${host}:8080/hook`, events: ['*'] },
        });
        expect(res.status, host).to.equal(400);
        expect(res.body.error).to.include(`url: must be a public address (${shown})`);
      }
    } finally {
      await m.close();
    }
  });
});
