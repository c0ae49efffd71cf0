// Credits drawn by reservations and batch ingest (issue 42, item 1), the reconciler's ledger check (item 3), and the
// many-writers test with every kind of writer against the real PostgreSQL.
import { expect } from 'chai';
import { expireCredits } from '../../src/credits/credits-time.service.js';
import { sql } from '../../src/db/sql.js';
import { creditDrifts } from '../../src/housekeeping/reconciler.js';
import { reservationExpiryWorkflowId, type ReservationExpiryState } from '../../workflows/shared.js';
import { creditsAddUp, creditsCatalog } from '../helpers/credits.js';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const DAY = 86_400_000;

describe('credits drawn by reservations and batch ingest', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp({
      accounts: [
        { id: 'a1', plan: 'pro' },
        { id: 'a2', plan: 'pro' },
      ],
    }));
    await creditsCatalog(app, base);
    // No plan grant (the account's actor would add 2,000 at some moment): each test's balance is its own grants.
    const none = await call('PATCH', `${base}/plans/pro/entitlements/credits`, {
      token: app.api_key,
      body: { max: 0 },
    });
    expect(none.status, none.text).to.equal(200);
  });
  const grant = (amount: number, account = 'a1', expires_at?: string) =>
    post(`${base}/namespaces/${account}/credits/grants`, app.api_key, { pool: 'credits', amount, expires_at });
  const reserve = (feature: string, amount: number, expires_in?: number) =>
    post(`${base}/namespaces/a1/usage/${feature}/reservations`, app.api_key, { amount, expires_in });
  const settle = (id: string, how: 'commit' | 'release', amount?: number) =>
    post(`${base}/namespaces/a1/reservations/${id}/${how}`, app.api_key, how === 'commit' ? { amount } : {});
  const count = async (feature: string, account = 'a1') =>
    (await get(`${base}/namespaces/${account}/usage/${feature}`, app.api_key)).body.count as number;
  const ingest = (events: { id: string; account?: string; entitlement: string; amount: number }[]) =>
    post(`${base}/usage/events`, app.api_key, { events: events.map((e) => ({ account: 'a1', ...e })) });
  const ledger = async (account = 'a1') =>
    (await get(`${base}/namespaces/${account}/credits/ledger`, app.api_key)).body.data.map(
      (l: { kind: string; amount: number; feature: string | null }) => [l.kind, l.amount, l.feature],
    );

  it('a reservation holds amount x cost; commit debits what it commits, release and expiry free the hold', async () => {
    await grant(100);
    const r = await reserve('premium', 6);
    expect(r.status, r.text).to.equal(201);
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 100, held: 60 } });
    const shown = (await get(`${base}/namespaces/a1/credits`, app.api_key)).body.data[0];
    expect(shown).to.include({ pool: 'credits', balance: 100, held: 60 });
    // The hold is not drawable: 40 left for others, by draws and reservations alike.
    const refused = await post(`${base}/namespaces/a1/usage/premium/amount`, app.api_key, { amount: 5 });
    expect(refused.status, refused.text).to.equal(402);
    expect(refused.body).to.include({ error: 'credits_exhausted', need: 50 });
    expect(refused.body.pool.balance, 'what can be drawn').to.equal(40);
    const tooBig = await reserve('premium', 5);
    expect(tooBig.status).to.equal(402);
    expect(tooBig.body.error).to.equal('credits_exhausted');
    const access = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
    expect(access.entitlements.find((e: { id: string }) => e.id === 'premium').can).to.equal(true);
    const b = await reserve('basic', 40);
    expect(b.status, b.text).to.equal(201);
    const after = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
    expect(
      after.entitlements.find((e: { id: string }) => e.id === 'basic').can,
      'every credit held: nothing to draw',
    ).to.equal(false);

    // Commit 4 of 6: 40 debited, the hold of 60 freed; the counter moves by 4.
    const done = await settle(r.body.id, 'commit', 4);
    expect(done.status, done.text).to.equal(200);
    expect(done.body).to.include({ status: 'committed', committed: 4 });
    expect(await count('premium')).to.equal(4);
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 60, held: 40 } });
    expect((await settle(r.body.id, 'commit', 4)).status, 'once').to.equal(409);
    // Release: the 40 basic credits are free again, nothing debited.
    expect((await settle(b.body.id, 'release')).status).to.equal(200);
    expect(await count('basic')).to.equal(0);
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 60, held: 0 } });
    expect(await ledger()).to.deep.equal([
      ['debit', -40, 'premium'],
      ['grant', 100, null],
    ]);

    // An expiry frees the hold through the reservation's workflow.
    const e = await reserve('premium', 2, 1);
    expect(e.status, e.text).to.equal(201);
    expect((await creditsAddUp(app.id)).a1.held).to.equal(20);
    const h = testEnv().deps.temporal.client.workflow.getHandle(reservationExpiryWorkflowId(app.id, e.body.id));
    await eventually(() => h.describe());
    expect(((await h.result()) as ReservationExpiryState).outcome).to.equal('expired');
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 60, held: 0 } });
  });

  it('a hold guards credits against draws, not expiry: a commit the balance no longer covers is a 402, still held', async () => {
    await grant(50, 'a1', new Date(Date.now() + DAY).toISOString());
    const r = await reserve('premium', 5);
    expect(r.status, r.text).to.equal(201);
    await expireCredits(testEnv().deps, app.id, 'a1', new Date(Date.now() + 2 * DAY).toISOString(), 'test');
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 0, held: 50 } });
    const short = await settle(r.body.id, 'commit', 5);
    expect(short.status, short.text).to.equal(402);
    expect(short.body).to.include({ error: 'credits_exhausted', need: 50 });
    expect(short.body.entitlement).to.deep.equal({ id: 'premium', name: 'Premium messages', cost: 10, amount: 5 });
    expect((await get(`${base}/namespaces/a1/reservations/${r.body.id}`, app.api_key)).body.status).to.equal('held');
    await grant(30);
    expect((await settle(r.body.id, 'commit', 3)).status, 'what the balance covers').to.equal(200);
    expect(await count('premium')).to.equal(3);
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 0, held: 0 } });
  });

  it('batch ingest debits with the counter, per event: what the balance cannot cover is blocked and moves neither', async () => {
    await grant(100);
    await grant(5, 'a2');
    const res = await ingest([
      { id: 'e1', entitlement: 'premium', amount: 3 }, // 30
      { id: 'e2', entitlement: 'premium', amount: 7 }, // 70 > 70 left? exactly covers
      { id: 'e3', entitlement: 'premium', amount: 1 }, // nothing left
      { id: 'e4', entitlement: 'premium', amount: -2 }, // refunds 20
      { id: 'e5', entitlement: 'basic', amount: 15 }, // 15 of the 20
      { id: 'e6', entitlement: 'basic', amount: 6 }, // 5 left: blocked
      { id: 'e7', account: 'a2', entitlement: 'premium', amount: 1 }, // a2 has 5: blocked
      { id: 'e8', account: 'a2', entitlement: 'basic', amount: 5 },
      { id: 'e9', entitlement: 'credits', amount: 1 },
      { id: 'e10', entitlement: 'api_calls', amount: 2 },
    ]);
    expect(res.status, res.text).to.equal(200);
    const out = res.body.results.map((r: { status: string; count: number | null }) => [r.status, r.count]);
    expect(out).to.deep.equal([
      ['applied', 3],
      ['applied', 10],
      ['blocked', 10],
      ['applied', 8],
      ['applied', 15],
      ['blocked', 15],
      ['blocked', 0],
      ['applied', 5],
      ['error', null],
      ['applied', 2],
    ]);
    expect(res.body.results[2].error).to.equal('Credits exhausted: 10 credits needed, 0 left');
    expect(res.body.results[8].error).to.match(/is a credits pool/);
    expect(await count('premium')).to.equal(8);
    expect(await count('basic')).to.equal(15);
    expect(await count('basic', 'a2')).to.equal(5);
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 5, held: 0 }, a2: { balance: 0, held: 0 } });
    expect(await ledger()).to.deep.equal([
      ['debit', -15, 'basic'],
      ['refund', 20, 'premium'],
      ['debit', -70, 'premium'],
      ['debit', -30, 'premium'],
      ['grant', 100, null],
    ]);
    const rows = (await get(`${base}/namespaces/a1/credits/ledger`, app.api_key)).body.data;
    expect(rows[3].request_id, 'a debit names its event').to.equal('e1');
    // Re-sent: duplicates, nothing debited twice.
    const again = await ingest([{ id: 'e1', entitlement: 'premium', amount: 3 }]);
    expect(again.body.results[0]).to.include({ status: 'applied', count: 3, duplicate: true });
    expect((await creditsAddUp(app.id)).a1.balance).to.equal(5);
    // An unlimited pool debits nothing and refuses nothing.
    expect(
      (await call('PATCH', `${base}/plans/pro/entitlements/credits`, { token: app.api_key, body: { max: null } }))
        .status,
    ).to.equal(200);
    const free = await ingest([{ id: 'u1', entitlement: 'premium', amount: 100 }]);
    expect(free.body.results[0]).to.include({ status: 'applied', count: 108 });
    expect((await creditsAddUp(app.id)).a1.balance).to.equal(5);
  });

  it('ingest writes credits.depleted when a batch empties a balance and an endpoint listens', async () => {
    const hook = await post(`${base}/webhooks`, app.api_key, {
      url: 'http://127.0.0.1:9/hook',
      events: ['credits.depleted', 'credits.low'],
    });
    expect(hook.status, hook.text).to.equal(201);
    await grant(30);
    const res = await ingest([
      { id: 'd1', entitlement: 'premium', amount: 1 },
      { id: 'd2', entitlement: 'premium', amount: 2 },
    ]);
    expect(res.body.results.map((r: { status: string }) => r.status)).to.deep.equal(['applied', 'applied']);
    const [ev] = await sql<{ type: string; data: { object: Record<string, unknown> } }>(
      testEnv().deps.orm.em.fork(),
      `select type, data from events where app_id = $1 and type like 'credits.%' and type <> 'credits.granted'`,
      [app.id],
    );
    expect(ev.type).to.equal('credits.depleted');
    expect(ev.data.object).to.include({ account_id: 'a1', pool: 'credits', balance: 0, previous_balance: 30 });
  });

  it("another app's key reaches neither this app's reservations nor its balances", async () => {
    await grant(100);
    const r = await reserve('premium', 2);
    expect(r.status, r.text).to.equal(201);
    const other = await seededApp();
    await creditsCatalog(other.app, other.base);
    // Its key on this app's paths: refused before any route runs.
    const commit = await post(`${base}/namespaces/a1/reservations/${r.body.id}/commit`, other.app.api_key, {
      amount: 2,
    });
    expect([401, 403, 404], commit.text).to.include(commit.status);
    // Its own paths name its own accounts and reservations only.
    const foreign = await post(`${other.base}/namespaces/a1/reservations/${r.body.id}/commit`, other.app.api_key, {
      amount: 2,
    });
    expect(foreign.status, foreign.text).to.equal(404);
    const ingested = await post(`${other.base}/usage/events`, other.app.api_key, {
      events: [{ id: 'x1', account: 'a1', entitlement: 'premium', amount: 1 }],
    });
    expect(ingested.body.results[0]).to.include({ status: 'error', error: 'Account a1 not found' });
    expect(await creditsAddUp(app.id)).to.deep.equal({ a1: { balance: 100, held: 20 } });
    expect(await count('premium')).to.equal(0);
  });

  it('the reconciler finds a balance that differs from its ledger (a row changed by hand in PostgreSQL)', async () => {
    await grant(100);
    await post(`${base}/namespaces/a1/usage/premium/amount`, app.api_key, { amount: 2 });
    const clean = await creditDrifts(testEnv().deps);
    expect(clean.checked).to.be.at.least(1);
    expect(clean.drifts.filter((d) => d.app_id === app.id)).to.deep.equal([]);
    await sql(
      testEnv().deps.orm.em.fork(),
      `update credit_balances set balance = balance + 7 where app_id = $1 and account_id = 'a1'`,
      [app.id],
    );
    const found = await creditDrifts(testEnv().deps);
    expect(found.drifts.filter((d) => d.app_id === app.id)).to.deep.equal([
      { app_id: app.id, account_id: 'a1', pool_id: 'credits', entity_id: '', balance: 87, ledger: 80 },
    ]);
  });

  it('many writers interleaved (draws, refunds, reservations, ingest, grants, expiries) never over-draw', async () => {
    const soon = new Date(Date.now() + DAY).toISOString();
    await grant(400);
    await grant(600, 'a1', soon); // spent first, and expires early in the run with part of it left
    // 24 writers at a time (more would wait for the test database's connection pool and answer 503s, as they should).
    const queue: (() => Promise<unknown>)[] = [];
    const results: { kind: string; status: number; body: unknown }[] = [];
    const track = (kind: string, p: () => Promise<{ status: number; body: unknown }>) =>
      queue.push(() => p().then((r) => results.push({ kind, status: r.status, body: r.body })));
    for (let i = 0; i < 120; i++) {
      const m = i % 12;
      if (m === 0) track('grant', () => grant(5));
      else if (m === 1)
        track('refund', () => post(`${base}/namespaces/a1/usage/premium/amount`, app.api_key, { amount: -1 }));
      else if (m === 2 || m === 3)
        track('reserve', () =>
          reserve('premium', 2).then(async (r) =>
            r.status === 201 ? settle(r.body.id, i % 2 ? 'commit' : 'release', i % 2 ? 1 : undefined) : r,
          ),
        );
      else if (m === 4)
        track('ingest', () =>
          ingest([
            { id: `i${i}a`, entitlement: 'premium', amount: 1 },
            { id: `i${i}b`, entitlement: 'basic', amount: 3 },
          ]),
        );
      else if (m === 5 && i === 17)
        queue.push(() =>
          expireCredits(testEnv().deps, app.id, 'a1', new Date(Date.now() + 2 * DAY).toISOString(), 'test'),
        );
      else track('draw', () => post(`${base}/namespaces/a1/usage/premium/amount`, app.api_key, { amount: 2 }));
    }
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) await next();
      }),
    );
    for (const r of results) expect([200, 201, 402], `${r.kind} ${JSON.stringify(r.body)}`).to.include(r.status);
    expect(results.filter((r) => r.status === 402).length, 'the balance ran out').to.be.greaterThan(0);
    const { a1 } = await creditsAddUp(app.id);
    expect(a1.held, 'every reservation settled').to.equal(0);
    // Every unit counted cost its price; every unit given back returned it.
    const [sums] = await sql<{ debits: string; refunds: string }>(
      testEnv().deps.orm.em.fork(),
      `select coalesce(sum(-amount) filter (where kind = 'debit'), 0) as debits,
              coalesce(sum(amount) filter (where kind = 'refund'), 0) as refunds
         from credit_ledger where app_id = $1`,
      [app.id],
    );
    const [expired] = await sql<{ n: string }>(
      testEnv().deps.orm.em.fork(),
      `select coalesce(sum(-amount), 0) as n from credit_ledger where app_id = $1 and kind = 'expiry'`,
      [app.id],
    );
    expect(Number(expired.n), 'the expiry took credits while the writers ran').to.be.greaterThan(0);
    expect((await count('premium')) * 10 + (await count('basic'))).to.equal(Number(sums.debits) - Number(sums.refunds));
  });
});
