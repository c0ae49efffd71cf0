// Console sign-ins and API credentials: each counter protects one thing (src/security/throttle.ts, admission.ts,
// sign-in-devices.ts). Each test drives a counter past its limit, then shows the unrelated valid credential works.
// The stack runs behind a declared proxy (TRUST_PROXY=1), so each test's client addresses are its own.
import { expect } from 'chai';
import type { Config } from '../../src/config.js';
import { sql } from '../../src/db/sql.js';
import { routes } from '../../src/routes.js';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { call } from '../helpers/http.js';
import { mountRoutes } from '../helpers/mount.js';
import { testEnv } from '../helpers/servers.js';

const em = () => testEnv().deps.orm.em.fork();
const PASSWORD = 'correct horse battery staple';
const WRONG = 'not the password at all';
const made = { users: [] as string[], orgs: [] as string[] };
let n = 0;

const clearCounters = () =>
  sql(em(), `delete from rate_limits where key like 'signin%' or key like 'authfail%' or key like 'consent%'`);

/** The real stack behind one declared proxy, with these limits. */
const mountWith = (over: Partial<Config>) =>
  mountRoutes(routes, { config: { ...testEnv().deps.config, TRUST_PROXY: 1, ...over } as Config });

/** A workspace with one app and people in it (made server-side, as setup and invitations do). */
async function workspace(roles: ('owner' | 'viewer' | 'member')[]) {
  const p = await people(testEnv().deps);
  const app = await createTestApp();
  const id = `ws_counters_${++n}_${Date.now()}`;
  const members: { id: string; email: string }[] = [];
  for (const role of roles) {
    const email = `counters-${++n}-${Date.now()}@example.com`;
    const { user } = await p.auth.api.signUpEmail({ body: { name: `Person ${n}`, email, password: PASSWORD } });
    made.users.push(user.id);
    if (role === 'owner' && members.length === 0) {
      await createWorkspace(p, { id, name: `Counters ${n}`, ownerId: user.id });
      made.orgs.push(id);
      await addAppToWorkspace(p, id, app.id);
    } else
      await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, $3)`, [
        id,
        user.id,
        role,
      ]);
    members.push({ id: user.id, email });
  }
  return { app, members };
}

/** A sign-in from `ip`, with the browser's cookies (a device cookie, or none). */
const signIn = (base: string, ip: string, email: string, password: string, cookie?: string) =>
  call('POST', '/api/auth/sign-in/email', {
    base,
    body: { email, password },
    headers: { Origin: base, 'X-Forwarded-For': ip, ...(cookie ? { Cookie: cookie } : {}) },
  });

/** The device cookie a successful sign-in set, as a browser sends it back. */
function deviceCookie(res: Awaited<ReturnType<typeof signIn>>): string {
  const set = res.headers.getSetCookie().find((c) => c.startsWith('offerkit.device_'));
  expect(set, res.headers.getSetCookie().join('\n')).to.be.a('string');
  return set!.split(';')[0];
}

const guessKey = (base: string, ip: string, app: TestApp, i: number) =>
  call('GET', `/apps/${app.id}/plans`, { base, token: `key_guess_${i}`, headers: { 'X-Forwarded-For': ip } });

describe('counters: console sign-ins and API credentials apart', function () {
  this.timeout(60_000);
  beforeEach(clearCounters);
  after(async () => {
    await clearCounters();
    const p = await people(testEnv().deps);
    await p.pool.query(`delete from orgs where id = any($1)`, [made.orgs]);
    await p.pool.query(`delete from workspace_members where user_id = any($1)`, [made.users]);
    for (const table of ['people_sessions', 'people_credentials'])
      await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made.users]);
    await p.pool.query(`delete from people_users where id = any($1)`, [made.users]);
  });

  it("made-up keys from an address do not refuse the operators' passwords, and failed passwords no valid key", async () => {
    const m = await mountWith({
      AUTH_FAILURE_LIMIT: 3,
      SIGN_IN_FAILURE_LIMIT_PER_ADDRESS: 3,
      SIGN_IN_FAILURE_LIMIT: 10,
    });
    try {
      const { app, members } = await workspace(['owner', 'viewer']);
      const [owner, viewer] = members;
      // The attack from the issue: made-up Bearer keys until the address's failed-credential counter runs out.
      const attacker = '203.0.113.10';
      for (let i = 0; i < 3; i++) expect((await guessKey(m.base, attacker, app, i)).status).to.equal(401);
      const blocked = await guessKey(m.base, attacker, app, 3);
      expect(blocked.status).to.equal(429);
      expect(blocked.body.error).to.match(/^Too many failed credentials/);
      // The owner's and the viewer's correct passwords from that address, in browsers that never signed in before.
      for (const who of [owner, viewer]) {
        const res = await signIn(m.base, attacker, who.email, PASSWORD);
        expect(res.status, res.text).to.equal(200);
      }

      // The other way round: failed passwords from an address until its sign-in counter runs out...
      const guesser = '203.0.113.11';
      for (let i = 0; i < 3; i++)
        expect((await signIn(m.base, guesser, `nobody-${i}@example.com`, WRONG)).status).to.equal(401);
      const refused = await signIn(m.base, guesser, 'nobody-else@example.com', WRONG);
      expect(refused.status).to.equal(429);
      expect(refused.body.error).to.match(/^Too many failed sign-ins from this address/);
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 900);
      // ...and every valid key from there still works: the API's counter never saw them.
      for (const [token, path] of [
        [app.api_key, 'plans'],
        [app.public_key, 'plans/pricing'],
        [testEnv().adminKey, 'plans'],
      ]) {
        const res = await call('GET', `/apps/${app.id}/${path}`, {
          base: m.base,
          token,
          headers: { 'X-Forwarded-For': guesser },
        });
        expect(res.status, res.text).to.equal(200);
      }
      // Two counters, two keys: the key guesses under the attacker's address, the passwords under the guesser's.
      const keys = (await sql<{ key: string }>(em(), `select key from rate_limits`)).map((r) => r.key);
      expect(keys).to.include.members([`authfail:${attacker}`, `signin-ip:${guesser}`]);
      expect(keys).to.not.include.members([`authfail:${guesser}`, `signin-ip:${attacker}`]);
    } finally {
      await m.close();
    }
  });

  it('a browser that signed in before is never refused for the address it shares with a guesser', async () => {
    const m = await mountWith({ SIGN_IN_FAILURE_LIMIT_PER_ADDRESS: 3, SIGN_IN_FAILURE_LIMIT: 10 });
    try {
      const { members } = await workspace(['owner', 'member']);
      const [owner, colleague] = members;
      // Behind one NAT (or a proxy without TRUST_PROXY): everyone shares this address.
      const office = '198.51.100.20';
      const first = await signIn(m.base, office, owner.email, PASSWORD);
      expect(first.status, first.text).to.equal(200);
      const cookie = deviceCookie(first);
      const attributes = first.headers
        .getSetCookie()
        .find((c) => c.startsWith('offerkit.device_'))!
        .split(';')
        .map((a) => a.trim().toLowerCase());
      expect(attributes).to.include.members(['httponly', 'samesite=strict', 'path=/api/auth/sign-in/email']);
      expect(first.headers.getSetCookie().some((c) => c.startsWith('offerkit.session_token='))).to.equal(true);

      for (let i = 0; i < 3; i++)
        expect((await signIn(m.base, office, `guess-${i}@example.com`, WRONG)).status).to.equal(401);
      expect((await signIn(m.base, office, 'guess-more@example.com', WRONG)).status).to.equal(429);
      // The owner's browser: its own counter, not the address's.
      const again = await signIn(m.base, office, owner.email, PASSWORD, cookie);
      expect(again.status, again.text).to.equal(200);
      // A browser that never signed in to the colleague's account cannot be told from the guesser: held back, said
      // so (docs/decisions/0430-sign-in-counters-a-correct-password-from-a-known-browser.md).
      const fresh = await signIn(m.base, office, colleague.email, PASSWORD);
      expect(fresh.status).to.equal(429);
      expect(fresh.body.error).to.match(/a browser that has signed in to this account before is not held to it/);
      // The owner's cookie is the owner's: it does not let the colleague's attempts past.
      expect((await signIn(m.base, office, colleague.email, PASSWORD, cookie)).status).to.equal(429);
    } finally {
      await m.close();
    }
  });

  it("guesses at one account from many addresses never refuse that account's own browsers", async () => {
    const m = await mountWith({ SIGN_IN_FAILURE_LIMIT_PER_ADDRESS: 50, SIGN_IN_FAILURE_LIMIT: 3 });
    try {
      const { members } = await workspace(['owner', 'viewer']);
      const [owner, viewer] = members;
      const laptop = deviceCookie(await signIn(m.base, '192.0.2.1', owner.email, PASSWORD));
      const phone = deviceCookie(await signIn(m.base, '192.0.2.2', owner.email, PASSWORD));
      const viewerCookie = deviceCookie(await signIn(m.base, '192.0.2.3', viewer.email, PASSWORD));
      expect(laptop).to.not.equal(phone);

      // Sent at once from many addresses: the account's counter cannot be passed by attempts in flight.
      const burst = await Promise.all(
        Array.from({ length: 6 }, (_, i) => signIn(m.base, `192.0.2.${100 + i}`, owner.email, WRONG)),
      );
      expect(burst.filter((r) => r.status === 401)).to.have.length(3);
      expect(burst.filter((r) => r.status === 429)).to.have.length(3);
      const locked = await signIn(m.base, '192.0.2.110', owner.email, PASSWORD);
      expect(locked.status).to.equal(429);
      expect(locked.body.error).to.match(/^Too many failed sign-ins for this account/);

      // The owner's own browsers sign in, from anywhere.
      for (const [cookie, ip] of [
        [laptop, '192.0.2.1'],
        [phone, '198.51.100.99'],
      ])
        expect((await signIn(m.base, ip, owner.email, PASSWORD, cookie)).status).to.equal(200);
      // A cookie altered by a byte, or made for another account, proves nothing.
      const forged = laptop.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
      expect((await signIn(m.base, '192.0.2.1', owner.email, PASSWORD, forged)).status).to.equal(429);
      const renamed = `${laptop.split('=')[0]}=${viewerCookie.split('=')[1]}`;
      expect((await signIn(m.base, '192.0.2.1', owner.email, PASSWORD, renamed)).status).to.equal(429);

      // A browser's own failures count against it alone: the laptop runs out, the phone goes on.
      for (let i = 0; i < 3; i++)
        expect((await signIn(m.base, '192.0.2.1', owner.email, WRONG, laptop)).status).to.equal(401);
      const own = await signIn(m.base, '192.0.2.1', owner.email, PASSWORD, laptop);
      expect(own.status).to.equal(429);
      expect(own.body.error).to.match(/for this account in this browser/);
      expect((await signIn(m.base, '192.0.2.2', owner.email, PASSWORD, phone)).status).to.equal(200);
      // Another account is untouched by all of it.
      expect((await signIn(m.base, '192.0.2.110', viewer.email, PASSWORD)).status).to.equal(200);
    } finally {
      await m.close();
    }
  });

  it('the consent page: wrong admin keys are held to the address, the right key never', async () => {
    const m = await mountWith({ AUTH_FAILURE_LIMIT: 2 });
    const form = (ip: string, key: string) =>
      call('POST', '/oauth/consent/sign-in', {
        base: m.base,
        raw: new URLSearchParams({ request: 'oar_counters', admin_key: key }).toString(),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-Forwarded-For': ip },
      });
    try {
      const ip = '203.0.113.30';
      expect((await form(ip, 'guess-1')).status).to.equal(401);
      expect((await form(ip, 'guess-2')).status).to.equal(401);
      const page = await form(ip, 'guess-3');
      expect(page.status).to.equal(429);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      expect(Number(page.headers.get('retry-after'))).to.be.within(1, 900);
      expect(page.text).to.include('Too many wrong admin keys');
      expect((await form(ip, testEnv().adminKey)).status).to.equal(303);
      // Wrong passwords at the console's sign-in from there are not key guesses: the key still works.
      await signIn(m.base, ip, 'someone@example.com', WRONG);
      expect((await form(ip, testEnv().adminKey)).status).to.equal(303);
    } finally {
      await m.close();
    }
  });
});
