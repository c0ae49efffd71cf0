// Members and invitations of a workspace from the console (owners and admins), the rules that keep a workspace
// owned, another workspace's admin getting nothing, and the delivery's link to its Temporal workflow.
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { presentDelivery } from '../../src/webhooks/webhooks.present.js';
import type { IWebhookDelivery } from '../../src/webhooks/webhooks.entities.js';
import { createTestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { inbox, invitationToken } from '../helpers/mail.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const PASSWORD = 'correct horse battery staple';
let n = 0;
const made = { users: [] as string[], orgs: [] as string[] };

async function cleanUp() {
  const p = await people(testEnv().deps);
  await p.pool.query(`delete from workspace_invitations where org_id = any($1)`, [made.orgs]);
  await p.pool.query(`delete from workspace_members where user_id = any($1) or org_id = any($2)`, [
    made.users,
    made.orgs,
  ]);
  await p.pool.query(`delete from orgs where id = any($1)`, [made.orgs]);
  for (const table of ['people_sessions', 'people_credentials'])
    await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
  await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
}

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

async function person(role: 'owner' | 'admin' | 'member' | 'viewer' | null, workspaceId?: string) {
  const p = await people(testEnv().deps);
  const email = `members-${++n}-${Date.now()}@example.com`;
  const { user } = await p.auth.api.signUpEmail({ body: { name: `Person ${n}`, email, password: PASSWORD } });
  made.users.push(user.id);
  if (role && workspaceId)
    await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, $3)`, [
      workspaceId,
      user.id,
      role,
    ]);
  return { id: user.id, email, cookie: await signIn(email) };
}

async function workspace() {
  const app = await createTestApp();
  const p = await people(testEnv().deps);
  const id = `wsm_${++n}_${Date.now()}`;
  made.orgs.push(id);
  const owner = await person(null);
  await createWorkspace(p, { id, name: `Workspace ${n}`, ownerId: owner.id });
  await addAppToWorkspace(p, id, app.id);
  return { id, app, owner };
}

const as = (cookie: string, method: string, p: string, body?: unknown) =>
  call(method, `/console/api${p}`, { body, headers: { Cookie: cookie, Origin: testEnv().baseUrl } });

describe('workspace members and invitations (console)', function () {
  this.timeout(60_000);
  after(cleanUp);

  it('an admin lists members with roles, invites, sees the pending invitation, revokes it: its link stops working', async () => {
    const ws = await workspace();
    const admin = await person('admin', ws.id);
    const list = await as(admin.cookie, 'GET', `/workspaces/${ws.id}/members`);
    expect(list.status, list.text).to.equal(200);
    expect(list.body.map((m: { email: string; role: string }) => [m.email, m.role])).to.deep.equal([
      [ws.owner.email, 'owner'],
      [admin.email, 'admin'],
    ]);
    const before = (await inbox('new.person@example.com')).length;
    const inv = await as(admin.cookie, 'POST', `/workspaces/${ws.id}/invitations`, {
      email: 'new.person@example.com',
      role: 'viewer',
    });
    expect(inv.status, inv.text).to.equal(201);
    const pending = await as(admin.cookie, 'GET', `/workspaces/${ws.id}/invitations`);
    expect(pending.status).to.equal(200);
    expect(pending.body).to.have.length(1);
    expect(pending.body[0]).to.include({ id: inv.body.id, email: 'new.person@example.com', role: 'viewer' });
    expect(pending.body[0].invited_by).to.equal(admin.email);
    const token = await invitationToken('new.person@example.com', before);
    expect(Date.parse(pending.body[0].expires_at)).to.be.greaterThan(Date.now());

    const revoked = await as(admin.cookie, 'DELETE', `/workspaces/${ws.id}/invitations/${inv.body.id}`);
    expect(revoked.status, revoked.text).to.equal(200);
    expect(revoked.body.id).to.equal(inv.body.id);
    expect((await as(admin.cookie, 'GET', `/workspaces/${ws.id}/invitations`)).body).to.deep.equal([]);
    expect((await call('POST', '/console/api/invitations/lookup', { body: { token } })).status).to.equal(404);
    const again = await as(admin.cookie, 'DELETE', `/workspaces/${ws.id}/invitations/${inv.body.id}`);
    expect(again.status).to.equal(404);
    expect(again.body.error).to.be.a('string');
    // The address can be invited again once revoked.
    const reinvite = await as(admin.cookie, 'POST', `/workspaces/${ws.id}/invitations`, {
      email: 'new.person@example.com',
    });
    expect(reinvite.status, reinvite.text).to.equal(201);
  });

  it('roles change within the rules: admins manage non-owners, only owners touch owners, one owner always stays', async () => {
    const ws = await workspace();
    const admin = await person('admin', ws.id);
    const member = await person('member', ws.id);
    const path = (u: { id: string }) => `/workspaces/${ws.id}/members/${u.id}`;

    const promoted = await as(admin.cookie, 'PATCH', path(member), { role: 'admin' });
    expect(promoted.status, promoted.text).to.equal(200);
    expect(promoted.body).to.include({ user_id: member.id, role: 'admin', email: member.email });
    expect((await as(admin.cookie, 'PATCH', path(member), { role: 'viewer' })).body.role).to.equal('viewer');
    // A viewer now: the members list is closed to them.
    expect((await as(member.cookie, 'GET', `/workspaces/${ws.id}/members`)).status).to.equal(403);
    expect((await as(member.cookie, 'PATCH', path(admin), { role: 'viewer' })).status).to.equal(403);

    // Admins neither make nor touch owners.
    const makeOwner = await as(admin.cookie, 'PATCH', path(member), { role: 'owner' });
    expect(makeOwner.status).to.equal(403);
    expect(makeOwner.body.error).to.match(/Only owners/);
    expect((await as(admin.cookie, 'PATCH', path(ws.owner), { role: 'member' })).status).to.equal(403);
    expect((await as(admin.cookie, 'DELETE', path(ws.owner))).status).to.equal(403);

    // The last owner stays an owner, even by their own hand.
    const last = await as(ws.owner.cookie, 'PATCH', path(ws.owner), { role: 'admin' });
    expect(last.status).to.equal(409);
    expect(last.body.error).to.match(/at least one owner/);
    expect((await as(ws.owner.cookie, 'DELETE', path(ws.owner))).status).to.equal(409);

    // With a second owner, the first may step down.
    expect((await as(ws.owner.cookie, 'PATCH', path(admin), { role: 'owner' })).body.role).to.equal('owner');
    expect((await as(ws.owner.cookie, 'PATCH', path(ws.owner), { role: 'admin' })).status).to.equal(200);

    // Bad input is a 400 naming the field; an unknown member a 404.
    const bad = await as(admin.cookie, 'PATCH', path(member), { role: 'god' });
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/^role: /);
    expect(
      (await as(admin.cookie, 'PATCH', `/workspaces/${ws.id}/members/nobody`, { role: 'viewer' })).status,
    ).to.equal(404);

    // Removing a member: they lose the workspace's app at once.
    const app = `/console/api/apps/${ws.app.id}/plans`;
    const headers = { Cookie: member.cookie, Origin: testEnv().baseUrl };
    expect((await call('GET', app, { headers })).status).to.equal(200);
    const removed = await as(admin.cookie, 'DELETE', path(member));
    expect(removed.status, removed.text).to.equal(200);
    expect(removed.body).to.deep.equal({ removed: true, user_id: member.id });
    expect((await call('GET', app, { headers })).status).to.equal(404);
    expect(
      (await as(admin.cookie, 'GET', `/workspaces/${ws.id}/members`)).body.map((m: { email: string }) => m.email),
    ).to.not.include(member.email);
  });

  it("an admin's pending invitations stop working once they are made a member or removed", async () => {
    const ws = await workspace();
    // Each by the secret its email carried.
    const open = (token: string) => call('POST', '/console/api/invitations/lookup', { body: { token } });
    const accept = (token: string) =>
      call('POST', `/console/api/invitations/accept`, {
        body: { token, name: 'Sock Puppet', password: PASSWORD },
        headers: { Origin: testEnv().baseUrl },
      });
    const ids = new Map<string, string>();
    const sendAs = async (cookie: string) => {
      const email = `sock-${++n}-${Date.now()}@example.com`;
      const res = await as(cookie, 'POST', `/workspaces/${ws.id}/invitations`, { email, role: 'admin' });
      expect(res.status, res.text).to.equal(201);
      const token = await invitationToken(email);
      ids.set(token, res.body.id);
      return token;
    };
    const member = (u: { id: string }) => `/workspaces/${ws.id}/members/${u.id}`;
    const demoted = await person('admin', ws.id);
    const removed = await person('admin', ws.id);
    const promoted = await person('admin', ws.id);
    const [a, b, c] = [await sendAs(demoted.cookie), await sendAs(removed.cookie), await sendAs(promoted.cookie)];
    expect((await as(ws.owner.cookie, 'PATCH', member(demoted), { role: 'member' })).status).to.equal(200);
    expect((await as(ws.owner.cookie, 'DELETE', member(removed))).status).to.equal(200);
    // An admin made an owner may still invite: theirs stays.
    expect((await as(ws.owner.cookie, 'PATCH', member(promoted), { role: 'owner' })).status).to.equal(200);
    for (const id of [a, b]) {
      expect((await open(id)).status, id).to.equal(404);
      expect((await accept(id)).status, id).to.equal(404);
    }
    const pending = (await as(ws.owner.cookie, 'GET', `/workspaces/${ws.id}/invitations`)).body as { id: string }[];
    expect(pending.map((i) => i.id)).to.deep.equal([ids.get(c)]);
    expect((await open(c)).status).to.equal(200);
    // One recorded while its sender was being stepped down (so not revoked with the change) does not hold either.
    const p = await people(testEnv().deps);
    const raced = `raced-secret-${n}`;
    await p.pool.query(
      `insert into workspace_invitations (id, org_id, email, role, invited_by, expires_at, token_hash)
       values ($1, $2, 'raced@example.com', 'admin', $3, now() + interval '1 day', $4)`,
      [`inv_raced_${n}`, ws.id, demoted.id, createHash('sha256').update(raced).digest('hex')],
    );
    expect((await open(raced)).status).to.equal(404);
    expect((await accept(raced)).status).to.equal(404);
  });

  it('two owners stepping each other down at once: one goes through, the other is refused, one owner stays', async () => {
    const ws = await workspace();
    const second = await person('owner', ws.id);
    const path = (u: { id: string }) => `/workspaces/${ws.id}/members/${u.id}`;
    const answers = await Promise.all([
      as(ws.owner.cookie, 'PATCH', path(second), { role: 'admin' }),
      as(second.cookie, 'PATCH', path(ws.owner), { role: 'admin' }),
    ]);
    // The second, serialised behind the first, finds either one owner left (409) or itself no longer an owner (403).
    const [ok, refused] = [...answers].sort((a, b) => a.status - b.status);
    expect(ok.status).to.equal(200);
    expect(refused.status).to.be.oneOf([403, 409]);
    const roles = (
      await as(answers[0].status === 200 ? ws.owner.cookie : second.cookie, 'GET', `/workspaces/${ws.id}/members`)
    ).body as { role: string }[];
    expect(roles.filter((m) => m.role === 'owner')).to.have.length(1);
  });

  it("another workspace's admin gets nothing: 404 on every members and invitations route", async () => {
    const ws = await workspace();
    const other = await workspace();
    const outsider = await person('admin', other.id);
    const member = await person('member', ws.id);
    const inv = await as(ws.owner.cookie, 'POST', `/workspaces/${ws.id}/invitations`, { email: 'x@example.com' });
    expect(inv.status).to.equal(201);
    const tries: [string, string, unknown?][] = [
      ['GET', `/workspaces/${ws.id}/members`],
      ['PATCH', `/workspaces/${ws.id}/members/${member.id}`, { role: 'admin' }],
      ['DELETE', `/workspaces/${ws.id}/members/${member.id}`],
      ['GET', `/workspaces/${ws.id}/invitations`],
      ['DELETE', `/workspaces/${ws.id}/invitations/${inv.body.id}`],
      ['POST', `/workspaces/${ws.id}/invitations/${inv.body.id}/resend`],
      ['POST', `/workspaces/${other.id}/invitations/${inv.body.id}/resend`],
      // Their own workspace's path with this workspace's invitation and member: not found there either.
      ['DELETE', `/workspaces/${other.id}/invitations/${inv.body.id}`],
      ['PATCH', `/workspaces/${other.id}/members/${member.id}`, { role: 'viewer' }],
    ];
    for (const [method, p, body] of tries) {
      const res = await as(outsider.cookie, method, p, body);
      expect(res.status, `${method} ${p}`).to.equal(404);
      expect(res.body.error).to.be.a('string');
    }
    // Nothing changed.
    expect((await as(ws.owner.cookie, 'GET', `/workspaces/${ws.id}/invitations`)).body).to.have.length(1);
    const roles = (await as(ws.owner.cookie, 'GET', `/workspaces/${ws.id}/members`)).body;
    expect(roles.find((m: { user_id: string }) => m.user_id === member.id).role).to.equal('member');
    // Without a session: 401; an app key is not a person.
    expect((await call('GET', `/console/api/workspaces/${ws.id}/members`)).status).to.equal(401);
    expect(
      (await call('GET', `/console/api/workspaces/${ws.id}/members`, { token: ws.app.api_key })).status,
    ).to.be.oneOf([401, 403]);
  });
});

describe('a delivery names its Temporal workflow only when there is one', function () {
  this.timeout(60_000);

  it('an event delivery has workflow_id = its id (the workflow exists); a test send has none', async () => {
    const app = await createTestApp();
    const base = `/apps/${app.id}`;
    const r = await startReceiver();
    try {
      const ep = await post(`${base}/webhooks`, app.api_key, { url: r.url, events: ['plan.created'] });
      expect(ep.status, ep.text).to.equal(201);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      const [d] = await eventually(async () => {
        const list = (await get(`${base}/webhooks/${ep.body.id}/deliveries`, app.api_key)).body.data;
        return list.length && list[0].status !== 'pending' ? list : undefined;
      });
      expect(d.workflow_id).to.equal(d.id);
      const desc = await testEnv().deps.temporal.client.workflow.getHandle(d.workflow_id).describe();
      expect(desc.workflowId).to.equal(d.id);
      const test = await post(`${base}/webhooks/${ep.body.id}/test`, app.api_key, {});
      expect(test.status, test.text).to.be.oneOf([200, 201]);
      expect(test.body.test).to.equal(true);
      expect(test.body.workflow_id).to.equal(null);
      const list = (await get(`${base}/webhooks/${ep.body.id}/deliveries`, app.api_key)).body.data;
      expect(list.find((x: { test: boolean }) => x.test).workflow_id).to.equal(null);
    } finally {
      await r.close();
    }
  });

  it('a delivery whose start still waits in the outbox, or a test send, names no workflow', async () => {
    const now = new Date();
    const d = {
      id: 'whd_x',
      endpointId: 'whk_x',
      eventId: 'evt_x',
      eventType: 'plan.created',
      status: 'pending',
      attempts: 0,
      test: false,
      payload: {},
      createdAt: now,
      updatedAt: now,
    } as unknown as IWebhookDelivery;
    expect(presentDelivery(d).workflow_id).to.equal('whd_x');
    expect(presentDelivery(d, false).workflow_id).to.equal(null);
    expect(presentDelivery({ ...d, test: true } as IWebhookDelivery).workflow_id).to.equal(null);
  });
});
