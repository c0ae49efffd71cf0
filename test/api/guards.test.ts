// The one guard layer (src/http/router.ts, src/http/credentials.ts, src/http/guard.ts), tried as an attacker would: every
// spelling of a path, every credential on the read-only app, two workspaces and their people, the roles, the
// throttles on the matched route, and the rule that no guard reads the raw path.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { configSchema, type Config } from '../../src/config.js';
import { markWorkspaceReadOnly } from '../../src/apps/apps.service.js';
import { sql } from '../../src/db/sql.js';
import { READ_ONLY_APP } from '../../src/http/guard.js';
import { routes } from '../../src/routes.js';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import {
  connectProvider,
  createAccount,
  createTestApp,
  seedCatalog,
  seededApp,
  type TestApp,
} from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { mcpPost } from '../helpers/mcp.js';
import { openAuthorization, pkce, REDIRECT } from '../helpers/oauth.js';
import { rawRequest } from '../helpers/console.js';
import { invitationToken } from '../helpers/mail.js';
import { mountRoutes } from '../helpers/mount.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const em = () => testEnv().deps.orm.em.fork();
const PASSWORD = 'correct horse battery staple';
let n = 0;
/** What these tests made in the shared people tables, removed after them (other files set up the first owner). */
const made = { users: [] as string[], orgs: [] as string[] };

async function cleanUp() {
  const p = await people(testEnv().deps);
  await p.pool.query(`delete from orgs where id = any($1)`, [made.orgs]);
  await p.pool.query(`delete from workspace_members where user_id = any($1)`, [made.users]);
  for (const table of ['people_sessions', 'people_credentials'])
    await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
  await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
  made.users.length = 0;
  made.orgs.length = 0;
}

/** A person (made server-side, as setup and invitations do) signed in over HTTP: their session cookie. */
async function person(role: 'owner' | 'admin' | 'member' | 'viewer', workspaceId: string, base?: string) {
  const p = await people(testEnv().deps);
  const email = `guard-${++n}-${Date.now()}@example.com`;
  const { user } = await p.auth.api.signUpEmail({ body: { name: `Person ${n}`, email, password: PASSWORD } });
  made.users.push(user.id);
  await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, $3)`, [
    workspaceId,
    user.id,
    role,
  ]);
  return { id: user.id, email, cookie: await signIn(email, PASSWORD, base) };
}

async function signIn(email: string, password: string, base?: string) {
  const res = await call('POST', '/api/auth/sign-in/email', {
    body: { email, password },
    headers: { Origin: base ?? testEnv().baseUrl },
    base,
  });
  expect(res.status, res.text).to.equal(200);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

/** A workspace of its own with one app, and its owner. */
async function workspace() {
  const app = await createTestApp();
  const p = await people(testEnv().deps);
  const id = `ws_${++n}_${Date.now()}`;
  const owner = await p.auth.api.signUpEmail({
    body: { name: `Owner ${n}`, email: `owner-${id}@example.com`, password: PASSWORD },
  });
  made.users.push(owner.user.id);
  made.orgs.push(id);
  await createWorkspace(p, { id, name: `Workspace ${n}`, ownerId: owner.user.id });
  await addAppToWorkspace(p, id, app.id);
  return { id, app, ownerCookie: await signIn(`owner-${id}@example.com`, PASSWORD) };
}

/** A console call as a person: their cookie, from the console's own origin. */
const as = (cookie: string, method: string, p: string, body?: unknown) =>
  call(method, `/console/api${p}`, { body, headers: { Cookie: cookie, Origin: testEnv().baseUrl } });

async function readOnlyApp(): Promise<TestApp> {
  const { app } = await seededApp({ accounts: [{ id: 'acct_1', plan: 'pro' }] });
  const orgId = `ro_${++n}`;
  await post('/orgs', testEnv().adminKey, { id: orgId, app_ids: [app.id] });
  for (const change of await markWorkspaceReadOnly(em(), orgId)) await testEnv().deps.credentials.confirm(change);
  return app;
}

describe('the guard layer', function () {
  this.timeout(60_000);
  after(cleanUp);

  describe('one spelling of every path', () => {
    let app: TestApp;
    before(async () => {
      app = await readOnlyApp();
    });

    it('every other spelling of a write to the read-only app is 404 or 403, never a write', async () => {
      const encoded = `%${app.id.charCodeAt(0).toString(16)}${app.id.slice(1)}`;
      const spellings: [string, number][] = [
        [`/apps/${app.id}/plans`, 403],
        [`/apps/${encoded}/plans`, 403],
        [`/APPS/${app.id}/plans`, 404],
        [`/Apps/${app.id}/plans`, 404],
        [`/apps/${app.id}/PLANS`, 404],
        [`/apps/${app.id}/plans/`, 404],
        [`//apps/${app.id}/plans`, 404],
        [`/apps//${app.id}/plans`, 404],
        [`/apps/${app.id}//plans`, 404],
        [`/apps/${app.id}/%70lans`, 404],
      ];
      for (const [p, status] of spellings) {
        const res = await call('POST', p, { token: app.api_key, body: { id: `x${status}`, name: 'X' } });
        expect(res.status, p).to.equal(status);
        if (status === 403) expect(res.body.error).to.equal(READ_ONLY_APP);
      }
      const plans = (await get(`/apps/${app.id}/plans`, app.api_key)).body.map((x: { id: string }) => x.id);
      expect(plans).to.deep.equal(['free', 'pro', 'scale', 'internal']);
    });

    it('the MCP endpoint has one spelling, and tools on the read-only app write nothing', async () => {
      for (const p of [`/APPS/${app.id}/mcp`, `/apps/${app.id}/MCP`, `/apps/${app.id}/mcp/`]) {
        const res = await call('POST', p, {
          token: app.api_key,
          body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
          headers: { Accept: 'application/json', Host: 'evil.example' },
        });
        expect(res.status, p).to.equal(404);
      }
      // The documented spelling still checks the Host when the API is bound to a loopback address (fetch cannot
      // send another Host, so a raw request does).
      const mounted = await mountRoutes(routes, { config: { ...testEnv().deps.config, HOST: '127.0.0.1' } as Config });
      try {
        for (const [p, status] of [
          [`/apps/${app.id}/mcp`, 403],
          [`/APPS/${app.id}/mcp`, 404],
          [`/apps/${app.id}/MCP`, 404],
        ] as const) {
          const res = await rawRequest(
            `${mounted.base}${p}`,
            'POST',
            {
              Host: 'evil.example',
              Authorization: `Bearer ${app.api_key}`,
              Accept: 'application/json',
              'Content-Type': 'application/json',
            },
            { jsonrpc: '2.0', id: 1, method: 'tools/list' },
          );
          expect(res.status, p).to.equal(status);
        }
      } finally {
        await mounted.close();
      }
      const created = await mcpPost(
        app.id,
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'create_plan', arguments: { id: 'mcp', name: 'M' } },
        },
        app.api_key,
      );
      expect(created.body.result.isError).to.equal(true);
      expect(created.body.result.content[0].text).to.contain('Error 403').and.contain('read-only');
      expect((await get(`/apps/${app.id}/plans/mcp`, app.api_key)).status).to.equal(404);
    });

    it('the registration throttle counts every spelling that reaches the route, and other spellings are 404', async () => {
      const mounted = await mountRoutes(routes, {
        config: { ...testEnv().deps.config, OAUTH_REGISTER_LIMIT: 2 } as Config,
      });
      try {
        await sql(em(), `delete from rate_limits where key like 'register%'`);
        const register = (p: string) =>
          call('POST', p, { base: mounted.base, body: { redirect_uris: ['http://127.0.0.1:9/cb'] } });
        for (const p of ['/OAUTH/register', '/oauth/register/', '/oauth//register', '/Oauth/Register'])
          expect((await register(p)).status, p).to.equal(404);
        expect((await register('/oauth/register')).status).to.equal(201);
        expect((await register('/oauth/register')).status).to.equal(201);
        const third = await register('/oauth/register');
        expect(third.status).to.equal(429);
        expect(third.headers.get('retry-after')).to.match(/^\d+$/);
      } finally {
        await sql(em(), `delete from rate_limits where key like 'register%'`);
        await mounted.close();
      }
    });

    it('no guard or throttle reads the raw path: only the router, the request log and the static files do', () => {
      const root = path.resolve('src');
      const readers = (fs.readdirSync(root, { recursive: true }) as string[])
        .filter((f) => f.endsWith('.ts'))
        .filter((f) =>
          /\bctx\.(path|url|originalUrl|request\.(path|url))\b/.test(fs.readFileSync(path.join(root, f), 'utf8')),
        )
        .sort();
      // The PayPal stand-in is a server of its own (a stand-in for PayPal), not part of the service's stack.
      // The contract check (tests only) names the path in its messages.
      expect(readers.filter((f) => !f.startsWith('dev/paypal-standin'))).to.deep.equal([
        'console-api/console.ts',
        'http/contract.ts',
        'http/middleware.ts',
        'http/router.ts',
      ]);
    });
  });

  describe('the read-only app, for every credential', () => {
    let app: TestApp;
    let token: string;
    before(async () => {
      app = await readOnlyApp();
      token = (await post(`/apps/${app.id}/namespaces/acct_1/token`, app.api_key, {})).body.token;
    });

    it('reads work with the secret key, the publishable key and an account token', async () => {
      expect((await get(`/apps/${app.id}/namespaces/acct_1/plan`, app.public_key)).status).to.equal(200);
      expect((await get(`/apps/${app.id}/plans/pricing`, app.public_key)).status).to.equal(200);
      expect((await get(`/apps/${app.id}/namespaces/acct_1/usage`, app.public_key)).status).to.equal(200);
      expect((await get(`/apps/${app.id}/namespaces/acct_1/full-plan`, token)).status).to.equal(200);
      expect((await get(`/apps/${app.id}/namespaces`, app.api_key)).status).to.equal(200);
    });

    it('the publishable key adds no usage, holds no reservation and opens no checkout', async () => {
      const base = `/apps/${app.id}/namespaces/acct_1`;
      for (const [p, body] of [
        [`${base}/usage/api_calls/add`, {}],
        [`${base}/usage/api_calls/amount`, { amount: 3 }],
        [`${base}/usage/api_calls/reservations`, { amount: 1 }],
        [`/apps/${app.id}/plans/pro/checkout`, { account: 'acct_1' }],
        [`/apps/${app.id}/offers/any/checkout`, { plan: 'pro', interval: 'month', account: 'acct_1' }],
      ] as const) {
        const res = await post(p, app.public_key, body);
        expect(res.status, p).to.equal(403);
        expect(res.body.error).to.equal(READ_ONLY_APP);
      }
      expect((await get(`${base}/usage/api_calls`, app.api_key)).body.count).to.equal(0);
    });

    it('an account token walks no cancel session; the secret key writes nothing; the admin key may', async () => {
      const started = await post(`/apps/${app.id}/cancel-sessions`, token, { account_id: 'acct_1' });
      expect(started.status).to.equal(403);
      for (const [method, p] of [
        ['POST', `/apps/${app.id}/namespaces`],
        ['PATCH', `/apps/${app.id}`],
        ['DELETE', `/apps/${app.id}/namespaces/acct_1`],
        ['POST', `/apps/${app.id}/keys/regenerate`],
        ['DELETE', `/apps/${app.id}`],
      ])
        expect((await call(method, p, { token: app.api_key, body: {} })).status, `${method} ${p}`).to.equal(403);
      // Previews store nothing and still answer.
      expect(
        (await post(`/apps/${app.id}/offers/draft-preview`, app.api_key, { name: 'Try', plans: [] })).status,
      ).to.not.equal(403);
      const admin = await post(`/apps/${app.id}/namespaces`, testEnv().adminKey, { id: 'by_admin' });
      expect(admin.status).to.equal(201);
    });

    it("the provider's notifications still reach it: a checkout its admin opened completes on PayPal's word alone", async () => {
      const admin = testEnv().adminKey;
      await connectProvider({ ...app, api_key: admin });
      const offer = {
        id: 'ro_offer',
        name: 'Read-only offer',
        plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
      };
      expect((await post(`/apps/${app.id}/offers`, admin, offer)).status).to.equal(201);
      expect((await post(`/apps/${app.id}/offers/ro_offer/publish`, admin)).status).to.equal(200);
      const chk = await post(`/apps/${app.id}/offers/ro_offer/checkout`, admin, {
        plan: 'pro',
        interval: 'month',
        email: 'ro@example.com',
        return_url: 'https://shop.example/done',
      });
      expect(chk.status, chk.text).to.equal(201);
      // A forged notification is still refused by the provider's verification (401), not waved through.
      const forged = await call('POST', `/payments/webhooks/${app.id}`, {
        body: { id: 'WH-forged', event_type: 'BILLING.SUBSCRIPTION.ACTIVATED', resource: { id: 'I-forged' } },
      });
      expect(forged.status).to.equal(401);
      // Approved at the stand-in, which notifies; nobody calls complete.
      await testEnv().paypal.approve(chk.body.approve_url);
      const done = await eventually(async () => {
        const c = (await get(`/apps/${app.id}/checkouts/${chk.body.id}`, app.api_key)).body;
        return c.status === 'completed' ? c : undefined;
      });
      expect(done.account).to.equal('ro@example.com');
      // The provider's notification (sent after its activation delay; the checkout's own check may come first).
      await eventually(async () =>
        testEnv().paypal.sent.some((n) => n.url.endsWith(`/payments/webhooks/${app.id}`)) ? true : undefined,
      );
    });
  });

  describe('tenancy: two workspaces', () => {
    it("a person reaches only their workspace's apps, whatever id they forge", async () => {
      const a = await workspace();
      const b = await workspace();
      expect((await as(a.ownerCookie, 'GET', `/apps/${a.app.id}`)).status).to.equal(200);
      expect((await as(a.ownerCookie, 'GET', `/apps/${b.app.id}`)).status).to.equal(404);
      expect((await as(a.ownerCookie, 'POST', `/apps/${b.app.id}/plans`, { id: 'x', name: 'X' })).status).to.equal(404);
      const encoded = `%${b.app.id.charCodeAt(0).toString(16)}${b.app.id.slice(1)}`;
      expect((await as(a.ownerCookie, 'GET', `/apps/${encoded}/plans`)).status).to.equal(404);
      expect((await as(a.ownerCookie, 'POST', `/workspaces/${b.id}/apps`, { name: 'Mine now' })).status).to.equal(404);
      expect(
        (await as(a.ownerCookie, 'POST', `/workspaces/${b.id}/invitations`, { email: 'x@example.com' })).status,
      ).to.equal(404);
      // A body or query naming the other app changes nothing: the app is the path's.
      const q = await call('GET', `/console/api/apps/${a.app.id}/plans?appId=${b.app.id}`, {
        headers: { Cookie: a.ownerCookie },
      });
      expect(q.status).to.equal(200);
      // Better Auth's organization routes are not served at all: there is nothing to rename.
      for (const p of ['/api/auth/organization/update', '/api/auth/organization/create', '/api/auth/sign-up/email'])
        expect(
          (
            await call('POST', p, {
              body: {
                data: { slug: a.id },
                organizationId: b.id,
                email: 'z@example.com',
                password: PASSWORD,
                name: 'Z',
              },
              headers: { Cookie: b.ownerCookie, Origin: testEnv().baseUrl },
            })
          ).status,
          p,
        ).to.equal(404);
      expect((await as(a.ownerCookie, 'GET', `/apps/${b.app.id}`)).status).to.equal(404);
      const me = (await as(a.ownerCookie, 'GET', '/me')).body;
      expect(me.workspaces.map((w: { id: string }) => w.id))
        .to.include(a.id)
        .and.not.include(b.id);
    });

    it('a key of one app reaches no other app, and no cookie makes a key out of nothing', async () => {
      const a = await workspace();
      const b = await workspace();
      expect((await get(`/apps/${b.app.id}/plans`, a.app.api_key)).status).to.equal(401);
      // A session cookie on the API's own paths is not a credential.
      const res = await call('GET', `/apps/${a.app.id}/plans`, { headers: { Cookie: a.ownerCookie } });
      expect(res.status).to.equal(401);
    });
  });

  describe('roles', () => {
    it('the secret key is never in a page load; reveal, rotate, delete and invite follow the role table', async () => {
      const w = await workspace();
      const admin = await person('admin', w.id);
      const member = await person('member', w.id);
      const viewer = await person('viewer', w.id);
      const key = w.app.api_key;
      for (const who of [w.ownerCookie, admin.cookie, member.cookie, viewer.cookie]) {
        const app = await as(who, 'GET', `/apps/${w.app.id}`);
        expect(app.status).to.equal(200);
        expect(app.body.api_key).to.equal('[redacted]');
        expect(app.text).to.not.contain(key);
        expect(app.body.public_key).to.equal(w.app.public_key);
      }
      const reveal = (who: string) => as(who, 'POST', `/apps/${w.app.id}/secret-key/reveal`);
      expect((await reveal(member.cookie)).status).to.equal(403);
      expect((await reveal(viewer.cookie)).status).to.equal(403);
      expect((await reveal(admin.cookie)).body).to.deep.equal({ api_key: key });
      // Members edit the catalog; viewers only read.
      expect((await as(member.cookie, 'POST', `/apps/${w.app.id}/plans`, { id: 'm', name: 'M' })).status).to.equal(201);
      const refused = await as(viewer.cookie, 'POST', `/apps/${w.app.id}/plans`, { id: 'v', name: 'V' });
      expect(refused.status).to.equal(403);
      expect(refused.body.error).to.match(/viewer/);
      // Keys and payments: owners and admins.
      expect((await as(member.cookie, 'POST', `/apps/${w.app.id}/keys/regenerate`)).status).to.equal(403);
      expect((await as(member.cookie, 'DELETE', `/apps/${w.app.id}/payments`)).status).to.equal(403);
      expect(
        (await as(member.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email: 'm@example.com' })).status,
      ).to.equal(403);
      expect((await as(member.cookie, 'POST', `/workspaces/${w.id}/apps`, { name: 'No' })).status).to.equal(403);
      const rotated = await as(admin.cookie, 'POST', `/apps/${w.app.id}/keys/regenerate`);
      expect(rotated.status).to.equal(200);
      expect((await get(`/apps/${w.app.id}/plans`, key)).status).to.equal(401);
      // Deleting the app: the owner only.
      expect((await as(member.cookie, 'DELETE', `/apps/${w.app.id}`)).status).to.equal(403);
      expect((await as(admin.cookie, 'DELETE', `/apps/${w.app.id}`)).status).to.equal(403);
      expect((await as(w.ownerCookie, 'DELETE', `/apps/${w.app.id}`)).status).to.equal(200);
    });

    it('a viewer mints no account token (it acts for the account) and approves no MCP client above read', async () => {
      const w = await workspace();
      const viewer = await person('viewer', w.id);
      const member = await person('member', w.id);
      await seedCatalog(w.app);
      await createAccount(w.app, { id: 'cust1', plan: 'pro' });
      expect((await as(viewer.cookie, 'POST', `/apps/${w.app.id}/namespaces/cust1/token`, {})).status).to.equal(403);
      const minted = await as(member.cookie, 'POST', `/apps/${w.app.id}/namespaces/cust1/token`, {});
      expect(minted.status, minted.text).to.equal(201);
      const request = async () => {
        const client = (await post('/oauth/register', null, { redirect_uris: [REDIRECT] })).body;
        const url = new URL(`${testEnv().baseUrl}/oauth/authorize`);
        for (const [k, v] of Object.entries({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT,
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
          scope: 'mcp:full',
        }))
          url.searchParams.set(k, v);
        return openAuthorization(url);
      };
      const approve = async (cookie: string, level: string) =>
        as(cookie, 'POST', `/oauth/requests/${await request()}/approve`, { access_level: level, app_id: w.app.id });
      const viewed = await as(viewer.cookie, 'GET', `/oauth/requests/${await request()}`);
      expect(viewed.body.apps).to.deep.equal([{ id: w.app.id, name: w.app.name, max_level: 'read' }]);
      const full = await approve(viewer.cookie, 'full');
      expect(full.status).to.equal(403);
      expect(full.body.error).to.match(/at most read/);
      expect((await approve(viewer.cookie, 'write')).status).to.equal(403);
      expect((await approve(viewer.cookie, 'read')).status).to.equal(200);
      expect((await approve(member.cookie, 'full')).status).to.equal(403);
      expect((await approve(member.cookie, 'write')).status).to.equal(200);
      // The owner's role allows full, but the app's MCP server gives OAuth connections at most write (its cap).
      const capped = await approve(w.ownerCookie, 'full');
      expect(capped.status).to.equal(400);
      expect(capped.body.error).to.match(/at most write access/);
      await call('PATCH', `/apps/${w.app.id}/mcp/settings`, {
        token: testEnv().adminKey,
        body: { access_level: 'full' },
      });
      expect((await approve(w.ownerCookie, 'full')).status).to.equal(200);
    });

    it('someone with an account joins another workspace by its invitation, signed in as the invited address', async () => {
      const a = await workspace();
      const b = await workspace();
      const member = await person('member', a.id);
      const invited = await as(b.ownerCookie, 'POST', `/workspaces/${b.id}/invitations`, { email: member.email });
      expect(invited.status, invited.text).to.equal(201);
      // The link's secret went to the address by email.
      const token = await invitationToken(member.email);
      const acceptAs = (cookie: string | null, body: Record<string, unknown> = {}) =>
        call('POST', '/console/api/invitations/accept', {
          body: { token, ...body },
          headers: { Origin: testEnv().baseUrl, ...(cookie ? { Cookie: cookie } : {}) },
        });
      // Without a session (or as someone else) the address's owner must sign in first: nobody takes it over.
      const anon = await acceptAs(null, { name: 'Squatter', password: PASSWORD });
      expect(anon.status, anon.text).to.equal(409);
      expect((await acceptAs(a.ownerCookie)).status).to.equal(409);
      const joined = await acceptAs(member.cookie);
      expect(joined.status, joined.text).to.equal(201);
      expect(joined.body.user.id).to.equal(member.id);
      expect((await as(member.cookie, 'GET', `/apps/${b.app.id}/plans`)).status).to.equal(200);
      expect((await acceptAs(member.cookie)).status).to.equal(404);
    });

    it('a state change with a cookie from another site is refused', async () => {
      const w = await workspace();
      const res = await call('POST', `/console/api/apps/${w.app.id}/plans`, {
        body: { id: 'x', name: 'X' },
        headers: { Cookie: w.ownerCookie, Origin: 'https://evil.example' },
      });
      expect(res.status).to.equal(403);
      expect((await get(`/apps/${w.app.id}/plans/x`, w.app.api_key)).status).to.equal(404);
    });
  });

  describe('people', () => {
    it('invitations: bound to the invited address, one pending per address, one accept of many, members refused', async () => {
      const w = await workspace();
      const email = `invitee-${Date.now()}@example.com`;
      const inv = await as(w.ownerCookie, 'POST', `/workspaces/${w.id}/invitations`, { email, role: 'member' });
      expect(inv.status, inv.text).to.equal(201);
      expect((await as(w.ownerCookie, 'POST', `/workspaces/${w.id}/invitations`, { email })).status).to.equal(409);
      const token = await invitationToken(email);
      // A weak password is refused, and the invitation stays open.
      const weak = await call('POST', `/console/api/invitations/accept`, {
        body: { token, name: 'Ivy', password: 'password1234' },
        headers: { Origin: testEnv().baseUrl },
      });
      expect(weak.status).to.equal(400);
      expect(weak.body.error).to.match(/^password: /);
      const accepts = await Promise.all(
        Array.from({ length: 6 }, () =>
          call('POST', `/console/api/invitations/accept`, {
            body: { token, name: 'Ivy', password: PASSWORD },
            headers: { Origin: testEnv().baseUrl },
          }),
        ),
      );
      const statuses = accepts.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 201)).to.have.length(1);
      expect(
        statuses.filter((s) => s !== 201).every((s) => s === 409 || s === 404),
        String(statuses),
      ).to.equal(true);
      expect(accepts.find((r) => r.status === 201)!.body.user.email).to.equal(email);
      // The address belongs to the workspace now: inviting it again is a conflict, not a 500.
      expect((await as(w.ownerCookie, 'POST', `/workspaces/${w.id}/invitations`, { email })).status).to.equal(409);
      made.users.push(accepts.find((r) => r.status === 201)!.body.user.id);
      const cookie = await signIn(email, PASSWORD);
      expect((await as(cookie, 'GET', `/apps/${w.app.id}/plans`)).status).to.equal(200);
    });

    it('console sign-ins are throttled per account and per address, and X-Forwarded-For is ignored without TRUST_PROXY', async () => {
      const mounted = await mountRoutes(routes, {
        config: { ...testEnv().deps.config, SIGN_IN_FAILURE_LIMIT: 3, AUTH_FAILURE_LIMIT: 50 } as Config,
      });
      try {
        const w = await workspace();
        const member = await person('member', w.id);
        const attempt = (password: string, i: number) =>
          call('POST', '/api/auth/sign-in/email', {
            base: mounted.base,
            body: { email: member.email, password },
            headers: { Origin: mounted.base, 'X-Forwarded-For': `203.0.113.${i}` },
          });
        // Sent at once, the attempts cannot all pass a check made before any of them counted.
        const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => attempt('wrong password here', i)));
        expect(burst.filter((r) => r.status === 401)).to.have.length(3);
        expect(burst.filter((r) => r.status === 429)).to.have.length(5);
        const locked = await attempt(PASSWORD, 9);
        expect(locked.status).to.equal(429);
        expect(locked.headers.get('retry-after')).to.match(/^\d+$/);
        // Another account from the same address still signs in.
        const other = await person('member', w.id);
        const ok = await call('POST', '/api/auth/sign-in/email', {
          base: mounted.base,
          body: { email: other.email, password: PASSWORD },
          headers: { Origin: mounted.base },
        });
        expect(ok.status).to.equal(200);
        // No enumeration: an unknown address gets the same answer as a wrong password.
        const unknown = await call('POST', '/api/auth/sign-in/email', {
          base: mounted.base,
          body: { email: `nobody-${Date.now()}@example.com`, password: 'wrong password here' },
          headers: { Origin: mounted.base },
        });
        const wrong = await call('POST', '/api/auth/sign-in/email', {
          base: mounted.base,
          body: { email: other.email, password: 'wrong password here' },
          headers: { Origin: mounted.base },
        });
        expect(unknown.status).to.equal(wrong.status);
        expect(unknown.body.error).to.equal(wrong.body.error);
      } finally {
        await sql(em(), `delete from rate_limits where key like 'signin%' or key like 'authfail%'`);
        await mounted.close();
      }
    });
  });

  describe('the shipped throttling defaults', () => {
    /** The stack with the throttling settings a user gets from `npm start` (the shared test server turns two off). */
    const defaults = () => {
      const d = configSchema.parse({});
      return mountRoutes(routes, {
        config: {
          ...testEnv().deps.config,
          RATE_LIMIT_PER_SECOND: d.RATE_LIMIT_PER_SECOND,
          SECRET_KEY_RATE_LIMIT_PER_SECOND: d.SECRET_KEY_RATE_LIMIT_PER_SECOND,
          AUTH_FAILURE_LIMIT: d.AUTH_FAILURE_LIMIT,
          AUTH_FAILURE_WINDOW_SECONDS: d.AUTH_FAILURE_WINDOW_SECONDS,
          OAUTH_REGISTER_LIMIT: d.OAUTH_REGISTER_LIMIT,
        } as Config,
      });
    };

    it('20 guesses from an address, then 429 for guesses only; the right key from there still works', async () => {
      const d = configSchema.parse({});
      expect(d.AUTH_FAILURE_LIMIT).to.equal(20);
      const mounted = await defaults();
      try {
        await sql(em(), `delete from rate_limits where key like 'authfail%'`);
        const app = await createTestApp();
        const guesses = await Promise.all(
          Array.from({ length: d.AUTH_FAILURE_LIMIT }, (_, i) =>
            call('GET', `/apps/${app.id}/plans`, { base: mounted.base, token: `key_guess_${i}` }),
          ),
        );
        expect(guesses.map((r) => r.status)).to.deep.equal(guesses.map(() => 401));
        expect(
          (await call('GET', `/apps/${app.id}/plans`, { base: mounted.base, token: 'key_one_more' })).status,
        ).to.equal(429);
        const valid = await Promise.all(
          Array.from({ length: 150 }, () =>
            call('GET', `/apps/${app.id}/plans`, { base: mounted.base, token: app.api_key }),
          ),
        );
        // A backend's secret key: past 100 a second, no limit, no lockout.
        expect(valid.map((r) => r.status)).to.deep.equal(valid.map(() => 200));
      } finally {
        await sql(em(), `delete from rate_limits where key like 'authfail%'`);
        await mounted.close();
      }
    });

    it('the publishable key is held to 100 a second per key and client address; OAuth registrations to 20 an hour', async () => {
      const mounted = await defaults();
      try {
        await sql(em(), `delete from rate_limits where key like 'register%'`);
        const { app } = await seededApp();
        let limited = 0;
        for (let round = 0; round < 3 && !limited; round++) {
          const res = await Promise.all(
            Array.from({ length: 160 }, () =>
              call('GET', `/apps/${app.id}/plans/pricing`, { base: mounted.base, token: app.public_key }),
            ),
          );
          expect(res[0].headers.get('ratelimit-limit')).to.equal('100');
          limited = res.filter((r) => r.status === 429).length;
        }
        expect(limited).to.be.greaterThan(0);
        const register = () =>
          call('POST', '/oauth/register', { base: mounted.base, body: { redirect_uris: ['http://127.0.0.1:9/cb'] } });
        for (let i = 0; i < 20; i++) expect((await register()).status).to.equal(201);
        expect((await register()).status).to.equal(429);
      } finally {
        await sql(em(), `delete from rate_limits where key like 'register%'`);
        await mounted.close();
      }
    });
  });

  describe('checkouts opened with the publishable key', () => {
    it('are bounded per account and per client address (429 beyond)', async () => {
      const mounted = await mountRoutes(routes, {
        config: {
          ...testEnv().deps.config,
          PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT: 2,
          PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS: 3,
        } as Config,
      });
      try {
        const { app } = await seededApp();
        await connectProvider(app);
        await call('PATCH', `/apps/${app.id}`, {
          token: app.api_key,
          body: { checkout_url: 'https://shop.example/p' },
        });
        await post(`/apps/${app.id}/offers`, app.api_key, {
          id: 'launch',
          name: 'Launch',
          plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
        });
        expect((await post(`/apps/${app.id}/offers/launch/publish`, app.api_key)).status).to.equal(200);
        const open = (account: string) =>
          call('POST', `/apps/${app.id}/offers/launch/checkout`, {
            base: mounted.base,
            token: app.public_key,
            body: { plan: 'pro', interval: 'month', account },
          });
        expect((await open('a1')).status).to.equal(201);
        expect((await open('a1')).status).to.equal(201);
        const perAccount = await open('a1');
        expect(perAccount.status).to.equal(429);
        expect(perAccount.body.error).to.match(/for this account/);
        expect((await open('a2')).status).to.equal(201);
        const perAddress = await open('a3');
        expect(perAddress.status).to.equal(429);
        expect(perAddress.body.error).to.match(/from this address/);
        // The secret key (a backend) is not held to it.
        const backend = await call('POST', `/apps/${app.id}/offers/launch/checkout`, {
          base: mounted.base,
          token: app.api_key,
          body: { plan: 'pro', interval: 'month', account: 'a1' },
        });
        expect(backend.status).to.equal(201);
      } finally {
        await sql(em(), `delete from rate_limits where key like 'pubcheckout%'`);
        await mounted.close();
      }
    });
  });

  describe('MCP connections approved by a person', () => {
    it('stop working when the person leaves the workspace or loses the role that allowed the level', async () => {
      const ws = await workspace();
      const admin = await person('admin', ws.id);
      const approve = async (level: 'read' | 'write') => {
        const client = (await post('/oauth/register', null, { redirect_uris: [REDIRECT], client_name: 'Leaver' })).body;
        const { verifier, challenge } = pkce();
        const requestId = await openAuthorization(
          new URL(
            `${testEnv().baseUrl}/oauth/authorize?${new URLSearchParams({
              response_type: 'code',
              client_id: client.client_id,
              redirect_uri: REDIRECT,
              code_challenge: challenge,
              code_challenge_method: 'S256',
              resource: `${testEnv().baseUrl}/apps/${ws.app.id}/mcp`,
            })}`,
          ),
        );
        const ok = await as(admin.cookie, 'POST', `/oauth/requests/${requestId}/approve`, { access_level: level });
        expect(ok.status, ok.text).to.equal(200);
        const code = new URL(ok.body.redirect_url).searchParams.get('code')!;
        const token = await call('POST', '/oauth/token', {
          body: { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id },
        });
        expect(token.status, token.text).to.equal(200);
        return { client, token: token.body as { access_token: string; refresh_token: string } };
      };
      const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
      const write = await approve('write');
      const read = await approve('read');
      expect((await mcpPost(ws.app.id, list, write.token.access_token)).status).to.equal(200);
      // Lowered to viewer by the owner: a write connection stops (its access and its refresh), a read one goes on.
      // Through the console's own route, which answers once every API process has dropped what it kept.
      const member = `/workspaces/${ws.id}/members/${admin.id}`;
      const lowered = await as(ws.ownerCookie, 'PATCH', member, { role: 'viewer' });
      expect(lowered.status, lowered.text).to.equal(200);
      const refused = await mcpPost(ws.app.id, list, write.token.access_token);
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('www-authenticate')).to.include('error="invalid_token"');
      const refresh = await call('POST', '/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: write.token.refresh_token,
          client_id: write.client.client_id,
        },
      });
      expect(refresh.status).to.equal(400);
      expect(refresh.body.error).to.equal('invalid_grant');
      expect((await mcpPost(ws.app.id, list, read.token.access_token)).status).to.equal(200);
      // Gone from the workspace: nothing works.
      const removed = await as(ws.ownerCookie, 'DELETE', member);
      expect(removed.status, removed.text).to.equal(200);
      expect((await mcpPost(ws.app.id, list, read.token.access_token)).status).to.equal(401);
      // Connections approved with the admin key are bound to no one (covered across test/api/oauth.test.ts).
    });
  });
});
