// Every secret has an owner role, through every door (docs/security.md, "Who sees which secret"): the app's keys see
// their app's secrets; a person in the console sees a key or a signing secret only through an explicit, logged reveal
// their role allows, never in a page load or a regeneration's answer; MCP tools never hand one out, whether called with
// the secret key or an OAuth connection. Regenerations are logged with the person's id.
import { expect } from 'chai';
import { consoleRoles } from '../../src/console-api/console.routes.js';
import { requiredRole } from '../../src/http/guard.js';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { routes } from '../../src/routes.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { ALL_TOOLSETS, mcpPost, mcpUrl } from '../helpers/mcp.js';
import { approveWith, openAuthorization, pkce, postForm, REDIRECT } from '../helpers/oauth.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';

const PASSWORD = 'correct horse battery staple';
const ROLES = ['viewer', 'member', 'admin', 'owner'] as const;
type Role = (typeof ROLES)[number];
let n = 0;
const made = { users: [] as string[], orgs: [] as string[] };

async function signIn(email: string) {
  const res = await call('POST', '/api/auth/sign-in/email', {
    body: { email, password: PASSWORD },
    headers: { Origin: testEnv().baseUrl },
  });
  expect(res.status, res.text).to.equal(200);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

/** An app in a workspace of its own with one signed-in person of each role. */
async function workspace(): Promise<{ app: TestApp; people: Record<Role, { id: string; cookie: string }> }> {
  const p = await people(testEnv().deps);
  const app = await createTestApp();
  const id = `wss_${++n}_${Date.now()}`;
  made.orgs.push(id);
  const out = {} as Record<Role, { id: string; cookie: string }>;
  for (const role of [...ROLES].reverse()) {
    const email = `secrets-${role}-${++n}-${Date.now()}@example.com`;
    const { user } = await p.auth.api.signUpEmail({ body: { name: `A ${role}`, email, password: PASSWORD } });
    made.users.push(user.id);
    if (role === 'owner') {
      await createWorkspace(p, { id, name: `Secrets ${n}`, ownerId: user.id });
      await addAppToWorkspace(p, id, app.id);
    } else
      await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, $3)`, [
        id,
        user.id,
        role,
      ]);
    out[role] = { id: user.id, cookie: await signIn(email) };
  }
  return { app, people: out };
}

const as = (cookie: string, method: string, p: string, body?: unknown) =>
  call(method, `/console/api${p}`, { body, headers: { Cookie: cookie, Origin: testEnv().baseUrl } });

/** The audit lines the service logs while `fn` runs (its logger is silent in tests: the records are caught here). */
async function audited(fn: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const logger = testEnv().deps.logger;
  const lines: Record<string, unknown>[] = [];
  const info = logger.info;
  logger.info = function (this: unknown, ...args: unknown[]) {
    if (args[0] && typeof args[0] === 'object' && 'audit' in args[0]) lines.push(args[0] as Record<string, unknown>);
    return (info as (...a: unknown[]) => void).apply(this, args);
  } as typeof logger.info;
  try {
    await fn();
  } finally {
    logger.info = info;
  }
  return lines;
}

describe('who sees which secret, through every door', function () {
  this.timeout(90_000);
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    const p = await people(testEnv().deps);
    await p.pool.query(`delete from workspace_members where org_id = any($1)`, [made.orgs]);
    await p.pool.query(`delete from orgs where id = any($1)`, [made.orgs]);
    for (const table of ['people_sessions', 'people_credentials'])
      await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
    await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
  });

  it('webhook signing secrets: the secret key reads them; people get [redacted] everywhere and members reveal on purpose', async () => {
    const { app, people: who } = await workspace();
    const base = `/apps/${app.id}/webhooks`;
    const made = await post(base, app.api_key, { url: receiver.url, events: ['*'] });
    expect(made.status, made.text).to.equal(201);
    const secret = made.body.secret as string;
    expect(secret).to.match(/^whsec_/);
    expect((await get(`${base}/${made.body.id}`, app.api_key)).body.secret).to.equal(secret);
    for (const role of ROLES) {
      const read = await as(who[role].cookie, 'GET', `${base}/${made.body.id}`);
      expect(read.status, role).to.equal(200);
      expect(read.body.secret, role).to.equal('[redacted]');
      expect(read.text).to.not.contain(secret);
      expect((await as(who[role].cookie, 'GET', base)).text).to.not.contain(secret);
    }
    // A member's own new endpoint: its secret is not in the answer either (reveal it on purpose).
    const mine = await as(who.member.cookie, 'POST', base, { url: receiver.url, events: ['plan.created'] });
    expect(mine.status, mine.text).to.equal(201);
    expect(mine.body.secret).to.equal('[redacted]');
    // The reveal: members and above, each logged with the person; viewers never.
    const reveal = (role: Role, id = made.body.id) => as(who[role].cookie, 'POST', `${base}/${id}/secret/reveal`);
    const refused = await reveal('viewer');
    expect(refused.status).to.equal(403);
    expect(refused.body.error).to.match(/viewer.*member or above/);
    const lines = await audited(async () => {
      for (const role of ['member', 'admin', 'owner'] as const)
        expect((await reveal(role)).body, role).to.deep.equal({ secret });
    });
    expect(lines.map((l) => [l.audit, l.userId, l.webhookId])).to.deep.equal(
      (['member', 'admin', 'owner'] as const).map((r) => ['webhook_secret_revealed', who[r].id, made.body.id]),
    );
    // Rotating: members (who manage endpoints) may, the new secret is not answered to the browser, and it is logged.
    expect((await as(who.viewer.cookie, 'POST', `${base}/${made.body.id}/secret/regenerate`)).status).to.equal(403);
    let rotated: Awaited<ReturnType<typeof as>> | undefined;
    const rotation = await audited(async () => {
      rotated = await as(who.member.cookie, 'POST', `${base}/${made.body.id}/secret/regenerate`);
    });
    expect(rotated!.status, rotated!.text).to.equal(200);
    expect(rotated!.body.secret).to.equal('[redacted]');
    const now = (await get(`${base}/${made.body.id}`, app.api_key)).body.secret;
    expect(now).to.not.equal(secret);
    expect(rotated!.text).to.not.contain(now);
    expect(rotation).to.have.length(1);
    expect(rotation[0]).to.include({ audit: 'webhook_secret_regenerated', userId: who.member.id, appId: app.id });
    // With the secret key the rotation answers the new secret (the backend that asked keeps it), logged as the key's.
    const byKey = await audited(async () => {
      const r = await post(`${base}/${made.body.id}/secret/regenerate`, app.api_key);
      expect(r.body.secret).to.match(/^whsec_/);
    });
    expect(byKey[0]).to.include({ audit: 'webhook_secret_regenerated', by: 'secret' });
  });

  it("the app's keys: regeneration answers no key to a browser and is logged with the person", async () => {
    const { app, people: who } = await workspace();
    for (const role of ['viewer', 'member'] as const) {
      expect((await as(who[role].cookie, 'POST', `/apps/${app.id}/keys/regenerate`)).status).to.equal(403);
      expect((await as(who[role].cookie, 'POST', `/apps/${app.id}/public-key/regenerate`)).status).to.equal(403);
    }
    let secret: Awaited<ReturnType<typeof as>> | undefined;
    let publishable: Awaited<ReturnType<typeof as>> | undefined;
    const lines = await audited(async () => {
      secret = await as(who.admin.cookie, 'POST', `/apps/${app.id}/keys/regenerate`);
      publishable = await as(who.owner.cookie, 'POST', `/apps/${app.id}/public-key/regenerate`);
    });
    expect(secret!.status, secret!.text).to.equal(200);
    expect(secret!.body).to.deep.equal({ api_key: '[redacted]' });
    // The publishable key is public by design (it ships in pages): answered as it is.
    expect(publishable!.body.public_key).to.match(/^pub_/);
    expect(lines.map((l) => [l.audit, l.userId, l.appId])).to.deep.equal([
      ['secret_key_regenerated', who.admin.id, app.id],
      ['publishable_key_regenerated', who.owner.id, app.id],
    ]);
    // The old key is dead; the new one comes only through the logged reveal (owners and admins).
    expect((await get(`/apps/${app.id}/plans`, app.api_key)).status).to.equal(401);
    const revealed = await audited(async () => {
      const r = await as(who.owner.cookie, 'POST', `/apps/${app.id}/secret-key/reveal`);
      expect(r.body.api_key).to.match(/^key_/);
      expect((await get(`/apps/${app.id}/plans`, r.body.api_key)).status).to.equal(200);
    });
    expect(revealed[0]).to.include({ audit: 'secret_key_revealed', userId: who.owner.id });
  });

  it('MCP tools redact signing secrets and keys, with the secret key and with an OAuth connection', async () => {
    const { app } = await workspace();
    const hook = (await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] })).body;
    await call('PATCH', `/apps/${app.id}/mcp/settings`, { token: testEnv().adminKey, body: { access_level: 'full' } });
    // An OAuth connection, as an outside client gets one.
    const client = (await post('/oauth/register', null, { redirect_uris: [REDIRECT] })).body;
    const { verifier, challenge } = pkce();
    const authorize = new URL(`${testEnv().baseUrl}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: mcpUrl(app.id).toString(),
    }))
      authorize.searchParams.set(k, v);
    const code = await approveWith('full', undefined, app.id)(authorize);
    const tokens = await postForm('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
      code_verifier: verifier,
      resource: mcpUrl(app.id).toString(),
    });
    expect(tokens.status, JSON.stringify(tokens.body)).to.equal(200);
    let id = 0;
    const tool = async (credential: string, name: string, args: Record<string, unknown>) => {
      const res = await mcpPost(
        app.id,
        { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } },
        credential,
      );
      expect(res.status, res.text).to.equal(200);
      expect(res.body.result?.isError, res.text).to.not.equal(true);
      return res.text;
    };
    for (const credential of [app.api_key, tokens.body.access_token as string]) {
      for (const text of [
        await tool(credential, 'get_webhook', { webhookId: hook.id }),
        await tool(credential, 'list_webhooks', {}),
        await tool(credential, 'create_webhook', { url: receiver.url, events: ['plan.created'] }),
        await tool(credential, 'get_app', {}),
      ]) {
        expect(text).to.not.contain(hook.secret);
        expect(text).to.not.match(/whsec_|key_[A-Za-z0-9_-]{20}|pub_[A-Za-z0-9_-]{20}/);
      }
    }
  });

  it('a viewer tries every door to a signing secret: REST with their session, the console, their own MCP connection', async () => {
    const { app, people: who } = await workspace();
    const viewer = who.viewer.cookie;
    const hook = (await post(`/apps/${app.id}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] })).body;
    const secret = hook.secret as string;
    expect(secret).to.match(/^whsec_/);
    // REST: a session cookie is no key, on the endpoint's own path or its rotation.
    for (const [method, p] of [
      ['GET', `/apps/${app.id}/webhooks/${hook.id}`],
      ['GET', `/apps/${app.id}/webhooks`],
      ['POST', `/apps/${app.id}/webhooks/${hook.id}/secret/regenerate`],
    ]) {
      const res = await call(method, p, { headers: { Cookie: viewer, Origin: testEnv().baseUrl } });
      expect(res.status, `${method} ${p}`).to.equal(401);
      expect(res.text).to.not.contain(secret);
    }
    // The console: every read redacted, the reveal and the rotation refused, an endpoint of their own refused too.
    for (const p of [`/apps/${app.id}/webhooks/${hook.id}`, `/apps/${app.id}/webhooks`])
      expect((await as(viewer, 'GET', p)).text, p).to.not.contain(secret);
    for (const [p, body] of [
      [`/apps/${app.id}/webhooks/${hook.id}/secret/reveal`, undefined],
      [`/apps/${app.id}/webhooks/${hook.id}/secret/regenerate`, undefined],
      [`/apps/${app.id}/webhooks`, { url: receiver.url, events: ['*'] }],
    ] as const) {
      const res = await as(viewer, 'POST', p, body);
      expect(res.status, p).to.equal(403);
      expect(res.text).to.not.contain('whsec_');
    }
    // MCP: a connection the viewer approves in the console is read-only at most, and its tools redact the secret.
    await call('PATCH', `/apps/${app.id}/mcp/settings`, { token: testEnv().adminKey, body: { access_level: 'full' } });
    const client = (await post('/oauth/register', null, { redirect_uris: [REDIRECT] })).body;
    const { verifier, challenge } = pkce();
    const authorize = new URL(`${testEnv().baseUrl}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: mcpUrl(app.id).toString(),
    }))
      authorize.searchParams.set(k, v);
    const requestId = await openAuthorization(authorize);
    for (const level of ['write', 'full']) {
      const refused = await as(viewer, 'POST', `/oauth/requests/${requestId}/approve`, {
        access_level: level,
        app_id: app.id,
      });
      expect(refused.status, level).to.equal(403);
      expect(refused.body.error).to.match(/viewer.*at most read/);
    }
    const approved = await as(viewer, 'POST', `/oauth/requests/${requestId}/approve`, {
      access_level: 'read',
      app_id: app.id,
    });
    expect(approved.status, approved.text).to.equal(200);
    const tokens = await postForm('/oauth/token', {
      grant_type: 'authorization_code',
      code: new URL(approved.body.redirect_url).searchParams.get('code')!,
      redirect_uri: REDIRECT,
      client_id: client.client_id,
      code_verifier: verifier,
      resource: mcpUrl(app.id).toString(),
    });
    expect(tokens.status, JSON.stringify(tokens.body)).to.equal(200);
    const access = tokens.body.access_token as string;
    let id = 0;
    const rpc = async (method: string, params: Record<string, unknown>) => {
      const res = await mcpPost(app.id, { jsonrpc: '2.0', id: ++id, method, params }, access);
      expect(res.status, res.text).to.equal(200);
      expect(res.text).to.not.contain(secret);
      expect(res.text).to.not.contain('whsec_');
      return res.body;
    };
    // Every toolset (the webhooks one holds these tools): what the connection's level lets it call.
    const all = await mcpPost(app.id, { jsonrpc: '2.0', id: ++id, method: 'tools/list' }, access, ALL_TOOLSETS);
    expect(all.text).to.not.contain('whsec_');
    const listed = all.body.result.tools.map((t: { name: string }) => t.name) as string[];
    expect(listed).to.include.members(['get_webhook', 'list_webhooks']);
    expect(listed).to.not.include.members(['create_webhook', 'update_webhook', 'delete_webhook']);
    const read = await rpc('tools/call', { name: 'get_webhook', arguments: { webhookId: hook.id } });
    expect(read.result.isError, JSON.stringify(read)).to.not.equal(true);
    expect(read.result.structuredContent.secret).to.equal('[redacted]');
    // A write the connection's level does not reach is refused, and the endpoint keeps its secret.
    const moved = await rpc('tools/call', {
      name: 'update_webhook',
      arguments: { webhookId: hook.id, url: `${receiver.url}/elsewhere` },
    });
    expect(moved.error ?? moved.result.isError, JSON.stringify(moved)).to.be.ok;
    await rpc('resources/read', { uri: 'offer://events' });
    const after = (await get(`/apps/${app.id}/webhooks/${hook.id}`, app.api_key)).body;
    expect(after).to.include({ secret, url: receiver.url });
  });

  it('GET /console/api/roles is the route table: each console action with the least role the guard asks', async () => {
    const res = await get('/console/api/roles');
    expect(res.status).to.equal(200);
    const table = res.body.routes as Record<string, { role: Role; writes: boolean }>;
    expect(table).to.deep.equal(JSON.parse(JSON.stringify(consoleRoles(routes))));
    for (const def of routes.filter((r) => table[r.sdk]))
      expect(table[def.sdk].role, def.sdk).to.equal(requiredRole(def));
    expect(table['webhooks.get'].role).to.equal('viewer');
    expect(table['console.revealWebhookSecret'].role).to.equal('member');
    expect(table['console.revealSecretKey'].role).to.equal('admin');
    expect(table['apps.delete'].role).to.equal('owner');
    expect(table['console.invite'].role).to.equal('admin');
    // Admin-key-only routes are no console action.
    expect(table['console.invitationLink']).to.equal(undefined);
  });
});
