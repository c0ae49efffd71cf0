// Invitations prove control of the invited address: the accept link goes by email (real SMTP to the run's mail
// catcher) and is in no answer to the person who invited, in production neither in the log; a person made through an
// invitation and removed from their only workspace is deleted; an operator without SMTP prints a link with the admin
// key.
import http from 'node:http';
import type net from 'node:net';
import { expect } from 'chai';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import type { Config } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { closePeople, people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { createTestApp } from '../helpers/factories.js';
import { call, type Res } from '../helpers/http.js';
import { acceptLinkIn, inbox, invitationToken } from '../helpers/mail.js';
import { freePort, testEnv } from '../helpers/servers.js';

const PASSWORD = 'correct horse battery staple';
let n = 0;
const made = { users: [] as string[], orgs: [] as string[] };
const unique = (what: string) => `${what}-${++n}-${Date.now()}@corp.test`;

/** A stack of its own (the real middleware and routes) with some settings changed, logging into `lines`. */
async function stack(over: Partial<Config>) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  const deps: Deps = { ...testEnv().deps, logger, config: { ...testEnv().deps.config, ...over } as Config };
  const server = http.createServer(createApp(deps).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    base,
    lines,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await closePeople(deps);
    },
  };
}

async function signIn(email: string, base = testEnv().baseUrl) {
  const res = await call('POST', '/api/auth/sign-in/email', {
    body: { email, password: PASSWORD },
    headers: { Origin: base },
    base,
  });
  expect(res.status, res.text).to.equal(200);
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

/** A workspace with an app, its owner and an admin, both signed in. */
async function workspace(base?: string) {
  const p = await people(testEnv().deps);
  const app = await createTestApp();
  const id = `wsi_${++n}_${Date.now()}`;
  made.orgs.push(id);
  const personIn = async (role: 'owner' | 'admin' | null) => {
    const email = unique(role ?? 'person');
    const { user } = await p.auth.api.signUpEmail({ body: { name: `Person ${n}`, email, password: PASSWORD } });
    made.users.push(user.id);
    return { id: user.id, email, role };
  };
  const owner = await personIn('owner');
  const name = `Invitations ${n}`;
  await createWorkspace(p, { id, name, ownerId: owner.id });
  await addAppToWorkspace(p, id, app.id);
  const admin = await personIn('admin');
  await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, 'admin')`, [id, admin.id]);
  return {
    id,
    name,
    app,
    owner: { ...owner, cookie: await signIn(owner.email, base) },
    admin: { ...admin, cookie: await signIn(admin.email, base) },
  };
}

const as = (cookie: string, method: string, p: string, body?: unknown, base = testEnv().baseUrl) =>
  call(method, `/console/api${p}`, { body, headers: { Cookie: cookie, Origin: base }, base });

const accept = (token: string, body: Record<string, unknown> = {}, base = testEnv().baseUrl, cookie?: string) =>
  call('POST', '/console/api/invitations/accept', {
    body: { token, ...body },
    headers: { Origin: base, ...(cookie ? { Cookie: cookie } : {}) },
    base,
  });

/** Nothing in an answer to the inviter that would let them accept: no link, no secret. */
function noLinkIn(res: Res, token: string) {
  expect(res.text).to.not.contain(token);
  expect(res.text).to.not.match(/invite\?token=|\/console\/invite\//);
}

describe('invitations: the accept link goes by email to the invited address only', function () {
  this.timeout(60_000);
  after(async () => {
    const p = await people(testEnv().deps);
    await p.pool.query(`delete from workspace_invitations where org_id = any($1)`, [made.orgs]);
    await p.pool.query(`delete from workspace_members where org_id = any($1) or user_id = any($2)`, [
      made.orgs,
      made.users,
    ]);
    await p.pool.query(`delete from orgs where id = any($1)`, [made.orgs]);
    for (const table of ['people_sessions', 'people_credentials'])
      await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
    await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
  });

  it('is emailed over SMTP; the inviter gets no link, and the invitation id accepts nothing', async () => {
    const w = await workspace();
    const email = unique('cfo');
    const inv = await as(w.admin.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email, role: 'member' });
    expect(inv.status, inv.text).to.equal(201);
    expect(inv.body).to.include({ email, role: 'member', email_sent: true });
    expect(inv.body.message).to.equal(`The invitation was sent to ${email}.`);
    expect(inv.body).to.not.have.property('url');
    const [mail] = await eventuallyOne(email);
    expect(mail.subject).to.match(new RegExp(`^Person \\d+ invited you to ${w.name} on offerkit$`));
    const link = acceptLinkIn(mail)!;
    expect(link.url).to.equal(`${testEnv().baseUrl}/console/invite?token=${encodeURIComponent(link.token)}`);
    expect(mail.html).to.contain('Join Invitations');
    noLinkIn(inv, link.token);
    // Neither the pending list nor a revoke shows it.
    const pending = await as(w.owner.cookie, 'GET', `/workspaces/${w.id}/invitations`);
    expect(pending.body.map((i: { id: string }) => i.id)).to.deep.equal([inv.body.id]);
    noLinkIn(pending, link.token);
    // The id the inviter sees is not a way in.
    expect((await call('POST', '/console/api/invitations/lookup', { body: { token: inv.body.id } })).status).to.equal(
      404,
    );
    expect((await accept(inv.body.id, { name: 'Sock Puppet', password: PASSWORD })).status).to.equal(404);
    // The mailed secret is.
    const looked = await call('POST', '/console/api/invitations/lookup', { body: { token: link.token } });
    expect(looked.status, looked.text).to.equal(200);
    expect(looked.body).to.deep.equal({ email, workspace: w.name });
    const joined = await accept(link.token, { name: 'Cara Fo', password: PASSWORD });
    expect(joined.status, joined.text).to.equal(201);
    made.users.push(joined.body.user.id);
    expect(joined.body.user.email).to.equal(email);
    expect((await accept(link.token, { name: 'Again', password: PASSWORD })).status).to.equal(404);
  });

  it('sending again mails a new link and the older one stops; a member cannot send', async () => {
    const w = await workspace();
    const email = unique('again');
    const inv = await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email });
    const first = await invitationToken(email);
    const again = await as(w.admin.cookie, 'POST', `/workspaces/${w.id}/invitations/${inv.body.id}/resend`);
    expect(again.status, again.text).to.equal(200);
    expect(again.body).to.include({ id: inv.body.id, email_sent: true });
    const second = await invitationToken(email, 1);
    expect(second).to.not.equal(first);
    noLinkIn(again, second);
    expect((await call('POST', '/console/api/invitations/lookup', { body: { token: first } })).status).to.equal(404);
    expect((await call('POST', '/console/api/invitations/lookup', { body: { token: second } })).status).to.equal(200);
    const p = await people(testEnv().deps);
    const member = await p.auth.api.signUpEmail({
      body: { name: 'Member', email: unique('member'), password: PASSWORD },
    });
    made.users.push(member.user.id);
    await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, 'member')`, [
      w.id,
      member.user.id,
    ]);
    const memberCookie = await signIn(member.user.email);
    expect((await as(memberCookie, 'POST', `/workspaces/${w.id}/invitations/${inv.body.id}/resend`)).status).to.equal(
      403,
    );
  });

  it("the admin's sock puppet: an identity made through an invitation and removed from its only workspace is gone", async () => {
    // An admin who could open the link would make cfo@ themselves and keep the password after being removed; now
    // only the address's inbox has the link, and whoever it was, the identity goes with its last workspace.
    const w = await workspace();
    const email = unique('cfo');
    await as(w.admin.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email, role: 'admin' });
    const first = await invitationToken(email);
    const joined = await accept(first, { name: 'Cara Fo', password: PASSWORD });
    expect(joined.status, joined.text).to.equal(201);
    const cfo = joined.body.user.id as string;
    const cfoCookie = await signIn(email);
    const p = await people(testEnv().deps);
    const count = async (table: string, column: string) =>
      (await p.pool.query(`select count(*)::int as n from ${table} where ${column} = $1`, [cfo])).rows[0].n;
    expect(await count('people_sessions', '"userId"')).to.be.greaterThan(0);
    const removed = await as(w.owner.cookie, 'DELETE', `/workspaces/${w.id}/members/${cfo}`);
    expect(removed.status, removed.text).to.equal(200);
    expect(await count('people_users', 'id')).to.equal(0);
    expect(await count('people_sessions', '"userId"')).to.equal(0);
    expect(await count('people_credentials', '"userId"')).to.equal(0);
    // The session is gone with it, and so is the password.
    expect((await call('GET', '/console/api/me', { headers: { Cookie: cfoCookie } })).body.user).to.equal(null);
    const old = await call('POST', '/api/auth/sign-in/email', {
      body: { email, password: PASSWORD },
      headers: { Origin: testEnv().baseUrl },
    });
    expect(old.status).to.equal(401);
    // The link that made the identity does not make it again: it was used.
    const reused = await accept(first, { name: 'Cara Fo', password: PASSWORD });
    expect(reused.status, reused.text).to.equal(404);
    expect(await count('people_users', 'id')).to.equal(0);
    expect(
      (await p.pool.query(`select 1 from people_users where lower(email) = lower($1)`, [email])).rowCount,
    ).to.equal(0);
    // Invited again for real, the address's owner makes their own account (no 409 "already has an account").
    await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email, role: 'admin' });
    const real = await accept(await invitationToken(email, 1), { name: 'The real CFO', password: `${PASSWORD} 2` });
    expect(real.status, real.text).to.equal(201);
    made.users.push(real.body.user.id);
    expect(real.body.user.id).to.not.equal(cfo);
  });

  it('a removed admin: their accept links, their sending again and their session open nothing', async () => {
    const w = await workspace();
    const p = await people(testEnv().deps);
    // The admin invites an address they read themselves, and one they do not; then the owner removes them.
    const theirs = unique('mine');
    const real = unique('real');
    for (const email of [theirs, real])
      expect(
        (await as(w.admin.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email, role: 'admin' })).status,
      ).to.equal(201);
    const pending = (await as(w.owner.cookie, 'GET', `/workspaces/${w.id}/invitations`)).body as {
      id: string;
      email: string;
    }[];
    const idOf = (email: string) => pending.find((i) => i.email === email)!.id;
    const link = await invitationToken(theirs);
    expect((await as(w.owner.cookie, 'DELETE', `/workspaces/${w.id}/members/${w.admin.id}`)).status).to.equal(200);
    // Their own account (not made by an invitation) stays, and so does their session: it reaches nothing here.
    expect((await p.pool.query(`select 1 from people_users where id = $1`, [w.admin.id])).rowCount).to.equal(1);
    for (const [method, path] of [
      ['GET', `/workspaces/${w.id}/invitations`],
      ['POST', `/workspaces/${w.id}/invitations/${idOf(real)}/resend`],
      ['POST', `/workspaces/${w.id}/invitations/${idOf(theirs)}/resend`],
      ['GET', `/apps/${w.app.id}`],
    ]) {
      const res = await as(w.admin.cookie, method, path);
      expect(res.status, `${method} ${path}`).to.be.oneOf([403, 404]);
    }
    // The link they read: dead, whether opened as a new person or signed in as themselves.
    expect((await call('POST', '/console/api/invitations/lookup', { body: { token: link } })).status).to.equal(404);
    expect((await accept(link, { name: 'Back Door', password: PASSWORD })).status).to.equal(404);
    expect((await accept(link, {}, undefined, w.admin.cookie)).status).to.equal(404);
    // Neither invitation is pending any more, so the owner's "Send again" mails nothing: invite afresh instead.
    expect((await as(w.owner.cookie, 'GET', `/workspaces/${w.id}/invitations`)).body).to.deep.equal([]);
    const before = (await inbox(theirs)).length;
    for (const email of [theirs, real])
      expect(
        (await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations/${idOf(email)}/resend`)).status,
      ).to.equal(404);
    expect(await inbox(theirs)).to.have.length(before);
    const members = (await as(w.owner.cookie, 'GET', `/workspaces/${w.id}/members`)).body as { email: string }[];
    expect(members.map((m) => m.email)).to.deep.equal([w.owner.email]);
  });

  it('sending again: only a pending invitation, never one accepted or revoked, and the newest link alone works', async () => {
    const w = await workspace();
    const send = (id: string) => as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations/${id}/resend`);
    // Accepted: sending again would make a second way in for the same invitation.
    const used = unique('used');
    const a = await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email: used });
    const joined = await accept(await invitationToken(used), { name: 'Used Once', password: PASSWORD });
    expect(joined.status, joined.text).to.equal(201);
    made.users.push(joined.body.user.id);
    expect((await send(a.body.id)).status).to.equal(404);
    expect(await inbox(used)).to.have.length(1);
    // Revoked: it stays revoked.
    const gone = unique('gone');
    const b = await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email: gone });
    const revokedLink = await invitationToken(gone);
    expect((await as(w.owner.cookie, 'DELETE', `/workspaces/${w.id}/invitations/${b.body.id}`)).status).to.equal(200);
    expect((await send(b.body.id)).status).to.equal(404);
    expect(await inbox(gone)).to.have.length(1);
    expect((await accept(revokedLink, { name: 'Too Late', password: PASSWORD })).status).to.equal(404);
    // Pending, sent three times: only the third link works, once.
    const thrice = unique('thrice');
    const c = await as(w.admin.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email: thrice });
    for (let i = 0; i < 2; i++) expect((await send(c.body.id)).status).to.equal(200);
    await invitationToken(thrice, 2);
    const links = (await inbox(thrice)).map((m) => acceptLinkIn(m)!.token);
    expect(links).to.have.length(3);
    expect(new Set(links).size).to.equal(3);
    for (const old of links.slice(0, 2))
      expect((await accept(old, { name: 'Old Link', password: PASSWORD })).status).to.equal(404);
    const last = await accept(links[2], { name: 'Newest Link', password: PASSWORD });
    expect(last.status, last.text).to.equal(201);
    made.users.push(last.body.user.id);
    expect((await send(c.body.id)).status).to.equal(404);
  });

  it('a person with an account of their own (or in another workspace) keeps it when removed', async () => {
    const a = await workspace();
    const b = await workspace();
    // b's admin joins a through a's invitation, signed in as themselves: their identity was not made by it.
    await as(a.owner.cookie, 'POST', `/workspaces/${a.id}/invitations`, { email: b.admin.email, role: 'viewer' });
    const joined = await accept(await invitationToken(b.admin.email), {}, undefined, b.admin.cookie);
    expect(joined.status, joined.text).to.equal(201);
    expect((await as(a.owner.cookie, 'DELETE', `/workspaces/${a.id}/members/${b.admin.id}`)).status).to.equal(200);
    const p = await people(testEnv().deps);
    expect((await p.pool.query(`select 1 from people_users where id = $1`, [b.admin.id])).rowCount).to.equal(1);
    // Someone made by an invitation who also belongs to another workspace stays too.
    const email = unique('two');
    await as(a.owner.cookie, 'POST', `/workspaces/${a.id}/invitations`, { email });
    const made1 = await accept(await invitationToken(email), { name: 'Two Places', password: PASSWORD });
    made.users.push(made1.body.user.id);
    const cookie = await signIn(email);
    await as(b.owner.cookie, 'POST', `/workspaces/${b.id}/invitations`, { email });
    expect((await accept(await invitationToken(email, 1), {}, undefined, cookie)).status).to.equal(201);
    expect((await as(a.owner.cookie, 'DELETE', `/workspaces/${a.id}/members/${made1.body.user.id}`)).status).to.equal(
      200,
    );
    expect((await p.pool.query(`select 1 from people_users where id = $1`, [made1.body.user.id])).rowCount).to.equal(1);
  });

  it('in production: no link in any answer to the inviter nor in the log; without SMTP the admin key prints one', async () => {
    const prod = await stack({ NODE_ENV: 'production', SMTP_URL: undefined });
    try {
      const w = await workspace(prod.base);
      const email = unique('prod');
      const inv = await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email }, prod.base);
      expect(inv.status, inv.text).to.equal(201);
      expect(inv.body.email_sent).to.equal(false);
      expect(inv.body.message).to.match(/No email was sent .*no SMTP settings \(SMTP_URL\).*admin key/);
      expect(await inbox(email)).to.deep.equal([]);
      // The operator's door: the admin key, from their terminal. A person's session is not let in.
      const link = await call('POST', `/console/api/workspaces/${w.id}/invitations/link`, {
        token: testEnv().adminKey,
        body: { email },
        base: prod.base,
      });
      expect(link.status, link.text).to.equal(200);
      expect(link.body.url).to.match(new RegExp(`^${prod.base}/console/invite\\?token=`));
      const token = decodeURIComponent(new URL(link.body.url).searchParams.get('token')!);
      expect(
        (await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations/link`, { email }, prod.base)).status,
      ).to.equal(401);
      // Every answer the inviter can get says nothing of it.
      for (const res of [
        inv,
        await as(w.owner.cookie, 'GET', `/workspaces/${w.id}/invitations`, undefined, prod.base),
        await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations/${inv.body.id}/resend`, {}, prod.base),
      ])
        expect(res.text).to.not.match(/invite\?token=/);
      // The resend replaced the secret: the operator prints a new link, which works.
      expect((await accept(token, { name: 'Late', password: PASSWORD }, prod.base)).status).to.equal(404);
      const fresh = await call('POST', `/console/api/workspaces/${w.id}/invitations/link`, {
        token: testEnv().adminKey,
        body: { email },
        base: prod.base,
      });
      const freshToken = decodeURIComponent(new URL(fresh.body.url).searchParams.get('token')!);
      const joined = await accept(freshToken, { name: 'Pro Duction', password: PASSWORD }, prod.base);
      expect(joined.status, joined.text).to.equal(201);
      made.users.push(joined.body.user.id);
      // The log names the link's issue (audit) but never the link.
      const text = JSON.stringify(prod.lines);
      expect(text).to.not.contain(freshToken);
      expect(text).to.not.match(/invite\?token=/);
      expect(prod.lines.some((l) => l.audit === 'invitation_link_issued' && l.by === 'admin')).to.equal(true);
    } finally {
      await prod.close();
    }
  });

  it('outside production the link is also in the log; a mail server that does not answer is said, not waited on', async () => {
    const down = await freePort(); // nothing listens there
    const dev = await stack({ NODE_ENV: 'development', SMTP_URL: `smtp://127.0.0.1:${down}` });
    try {
      const w = await workspace(dev.base);
      const email = unique('dev');
      const inv = await as(w.owner.cookie, 'POST', `/workspaces/${w.id}/invitations`, { email }, dev.base);
      expect(inv.status, inv.text).to.equal(201);
      expect(inv.body.email_sent).to.equal(false);
      expect(inv.body.message).to.match(/the mail server refused or did not answer/);
      const logged = dev.lines.find((l) => l.msg === 'invitation link (written to the log outside production only)');
      expect(logged?.url).to.match(new RegExp(`^${dev.base}/console/invite\\?token=`));
    } finally {
      await dev.close();
    }
  });
});

async function eventuallyOne(email: string) {
  await invitationToken(email);
  return inbox(email);
}
