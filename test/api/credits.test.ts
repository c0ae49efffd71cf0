// Credits (issue 42): pools and costs in the catalog, the debit in the usage statement, grants by the API, balances
// and the ledger, and the invariants a concurrency test holds them to against the real PostgreSQL.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { encodeCursor } from '../../src/http/pagination.js';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { call, del, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

/** The pool `credits` and two features drawing from it: `basic` (1 credit a message), `premium` (10). */
async function creditsCatalog(app: TestApp, base: string) {
  const ok = async (path: string, body: unknown, status = 201) => {
    const res = await post(`${base}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(status);
    return res.body;
  };
  await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
  await ok('/entitlements', {
    id: 'basic',
    type: 'usage',
    name: 'Basic messages',
    credits: { pool: 'credits', cost: 1 },
  });
  await ok('/entitlements', {
    id: 'premium',
    type: 'usage',
    name: 'Premium messages',
    credits: { pool: 'credits', cost: 10 },
  });
  await ok('/plans/pro/entitlements', { id: 'basic', max: null });
  await ok('/plans/pro/entitlements', { id: 'premium', max: null });
  await ok('/plans/pro/entitlements', { id: 'credits', max: 2000 });
}

/** The invariants: each balance is its ledger's sum, and its grants' remainders less what is not yet allocated. */
async function ledgerAddsUp(appId: string) {
  const em = testEnv().deps.orm.em.fork();
  const rows = await sql<{ balance: string; ledger: string; grants: string; unallocated: string }>(
    em,
    `select b.balance, b.unallocated,
            (select coalesce(sum(amount), 0) from credit_ledger l where l.app_id = b.app_id and l.account_id =
              b.account_id and l.pool_id = b.pool_id and l.entity_id = b.entity_id) as ledger,
            (select coalesce(sum(remaining), 0) from credit_grants g where g.app_id = b.app_id and g.account_id =
              b.account_id and g.pool_id = b.pool_id and g.entity_id = b.entity_id) as grants
       from credit_balances b where b.app_id = $1`,
    [appId],
  );
  for (const r of rows) {
    expect(Number(r.ledger), 'the balance is the ledger sum').to.equal(Number(r.balance));
    expect(Number(r.grants) - Number(r.unallocated), 'grants less unallocated').to.equal(Number(r.balance));
  }
  return rows.length;
}

describe('credits', function () {
  this.timeout(40_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp({ accounts: [{ id: 'a1', plan: 'pro' }] }));
  });

  describe('catalog: pools and costs', () => {
    it('a pool and features drawing from it at a cost; they read back and list', async () => {
      await creditsCatalog(app, base);
      const pool = (await get(`${base}/entitlements/credits`, app.api_key)).body;
      expect(pool).to.include({ id: 'credits', type: 'credits', name: 'AI credits' });
      expect(pool.credits).to.deep.equal({ rollover: 'none', per: 'account' });
      const premium = (await get(`${base}/entitlements/premium`, app.api_key)).body;
      expect(premium.credits).to.deep.equal({ pool: 'credits', cost: 10 });
      expect((await get(`${base}/entitlements/api_calls`, app.api_key)).body.credits).to.equal(null);
      const changed = await patch(`${base}/entitlements/credits`, app.api_key, { credits: { rollover: { cap: 500 } } });
      expect(changed.status, changed.text).to.equal(200);
      expect(changed.body.credits).to.deep.equal({ rollover: { cap: 500 }, per: 'account' });
      const cheaper = await patch(`${base}/entitlements/premium`, app.api_key, {
        credits: { pool: 'credits', cost: 5 },
      });
      expect(cheaper.body.credits).to.deep.equal({ pool: 'credits', cost: 5 });
    });

    it('refuses what does not fit with a 4xx naming it', async () => {
      await creditsCatalog(app, base);
      const bad = async (path: string, body: unknown, status: number, error: RegExp, method = 'POST') => {
        const res = await call(method, `${base}${path}`, { token: app.api_key, body });
        expect(res.status, res.text).to.equal(status);
        expect(res.body.error).to.match(error);
      };
      await bad(
        '/entitlements',
        { id: 'x', type: 'usage', name: 'X', credits: { pool: 'nope', cost: 1 } },
        404,
        /Credits pool nope not found/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'usage', name: 'X', credits: { pool: 'api_calls', cost: 1 } },
        400,
        /api_calls is of type usage, not a credits pool/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'usage', name: 'X', credits: { pool: 'credits' } },
        400,
        /needs both `pool` and `cost`/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'usage', name: 'X', credits: { pool: 'credits', cost: 0 } },
        400,
        /cost/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'usage', name: 'X', credits: { pool: 'credits', cost: 1.5 } },
        400,
        /cost/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'usage', name: 'X', credits: { rollover: 'none' } },
        400,
        /belongs to a pool/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'boolean', name: 'X', credits: { pool: 'credits', cost: 1 } },
        400,
        /boolean/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'credits', name: 'X', credits: { pool: 'credits', cost: 1 } },
        400,
        /belong to a usage entitlement/,
      );
      await bad(
        '/entitlements',
        { id: 'x', type: 'credits', name: 'X', overage: { mode: 'block' } },
        400,
        /no overage/,
      );
      await bad('/entitlements/credits', { credits: null }, 400, /only a usage entitlement/, 'PATCH');
      // The pool is drawn from: 409 naming the features; it is on a plan: 409 naming the plan.
      const drawn = await del(`${base}/entitlements/credits`, app.api_key);
      expect(drawn.status, drawn.text).to.equal(409);
      expect(drawn.body.error).to.match(/still attached/);
      expect((await del(`${base}/plans/pro/entitlements/credits`, app.api_key)).status).to.equal(200);
      const still = await del(`${base}/entitlements/credits`, app.api_key);
      expect(still.status).to.equal(409);
      expect(still.body).to.include({ error: still.body.error });
      expect(still.body.features).to.deep.equal(['basic', 'premium']);
      for (const f of ['basic', 'premium'])
        expect((await patch(`${base}/entitlements/${f}`, app.api_key, { credits: null })).body.credits).to.equal(null);
      expect((await del(`${base}/entitlements/credits`, app.api_key)).status).to.equal(200);
    });

    it('usage calls on a pool itself are a 400', async () => {
      await creditsCatalog(app, base);
      const res = await post(`${base}/namespaces/a1/usage/credits/add`, app.api_key);
      expect(res.status).to.equal(400);
      expect(res.body.error).to.match(/credits pool/);
    });
  });

  describe('the debit, grants and balances', () => {
    const grant = (body: Record<string, unknown>, key?: string) =>
      call('POST', `${base}/namespaces/a1/credits/grants`, {
        token: app.api_key,
        body,
        headers: key ? { 'Idempotency-Key': key } : {},
      });
    const amount = (feature: string, n: number) =>
      post(`${base}/namespaces/a1/usage/${feature}/amount`, app.api_key, { amount: n });
    const balance = async () => {
      const res = await get(`${base}/namespaces/a1/credits`, app.api_key);
      expect(res.status, res.text).to.equal(200);
      return res.body.data.find((p: { pool: string }) => p.pool === 'credits');
    };

    it('draws amount x cost with the counter; a draw the balance cannot cover is a 402 that moves neither', async () => {
      await creditsCatalog(app, base);
      const g = await grant({ pool: 'credits', amount: 100, reason: 'welcome' });
      expect(g.status, g.text).to.equal(201);
      expect(g.body).to.include({
        pool: 'credits',
        amount: 100,
        remaining: 100,
        source: 'api',
        reason: 'welcome',
        balance: 100,
      });
      expect(g.body.id).to.match(/^grt_/);

      expect((await amount('premium', 3)).body).to.deep.equal({ entitlement: 'premium', count: 3 });
      expect((await post(`${base}/namespaces/a1/usage/basic/add`, app.api_key)).body.count).to.equal(1);
      expect((await balance()).balance).to.equal(69);

      const refused = await amount('premium', 7);
      expect(refused.status, refused.text).to.equal(402);
      expect(refused.body).to.include({ error: 'credits_exhausted', need: 70 });
      expect(refused.body.pool).to.deep.equal({ id: 'credits', name: 'AI credits', balance: 69 });
      expect(refused.body.entitlement).to.deep.equal({ id: 'premium', name: 'Premium messages', cost: 10, amount: 7 });
      expect(refused.body.message).to.match(/70 needed, 69 left/);
      expect(refused.body).to.have.property('offer');
      expect(refused.body.packs).to.deep.equal([]);
      expect(
        (await get(`${base}/namespaces/a1/usage/premium`, app.api_key)).body.count,
        'the counter did not move',
      ).to.equal(3);
      expect((await balance()).balance).to.equal(69);

      // Effective access: the pool's balance, and whether each drawing feature can be used.
      const access = (await get(`${base}/namespaces/a1/plan`, app.public_key)).body;
      expect(access.credits).to.deep.equal([
        {
          id: 'credits',
          name: 'AI credits',
          type: 'credits',
          balance: 69,
          granted_per_period: 2000,
          unlimited: false,
          per_entity: false,
        },
      ]);
      const premium = access.entitlements.find((e: { id: string }) => e.id === 'premium');
      expect(premium).to.include({ can: true, usage: 3 });
      expect(premium.credits).to.deep.equal({ pool: 'credits', cost: 10 });
      expect(
        access.entitlements.find((e: { id: string }) => e.id === 'credits'),
        'a pool is not a counter',
      ).to.equal(undefined);
      expect((await amount('premium', 6)).status).to.equal(200);
      const after = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
      expect(
        after.entitlements.find((e: { id: string }) => e.id === 'premium').can,
        '9 left: a premium costs 10',
      ).to.equal(false);
      expect(after.entitlements.find((e: { id: string }) => e.id === 'basic').can).to.equal(true);

      // A negative amount gives back what it took off the counter, times the cost, as a refund grant.
      expect((await amount('premium', -2)).body.count).to.equal(7);
      const b = await balance();
      expect(b.balance).to.equal(29);
      expect(b.grants.map((x: { source: string; remaining: number }) => [x.source, x.remaining])).to.deep.equal([
        ['api', 9],
        ['refund', 20],
      ]);
      expect(await ledgerAddsUp(app.id)).to.equal(1);
      const ledger = (await get(`${base}/namespaces/a1/credits/ledger`, app.api_key)).body.data;
      expect(
        ledger.map((l: { kind: string; amount: number; feature: string | null }) => [l.kind, l.amount, l.feature]),
      ).to.deep.equal([
        ['refund', 20, 'premium'],
        ['debit', -60, 'premium'],
        ['debit', -1, 'basic'],
        ['debit', -30, 'premium'],
        ['grant', 100, null],
      ]);
      expect(ledger[1].request_id, 'a debit names its request').to.be.a('string');
      // Pages: each page's opaque next_cursor leads to the next, as on every cursor list; another list's is a 400.
      const pages: string[] = [];
      let cursor: string | null = '';
      while (cursor !== null) {
        const page: { status: number; text: string; body: { data: { id: string }[]; next_cursor: string | null } } =
          await get(`${base}/namespaces/a1/credits/ledger?limit=2&cursor=${cursor}`, app.api_key);
        expect(page.status, page.text).to.equal(200);
        pages.push(...page.body.data.map((l) => l.id));
        cursor = page.body.next_cursor;
      }
      expect(pages).to.deep.equal(ledger.map((l: { id: string }) => l.id));
      const foreign = encodeCursor({ at: '2026-01-01T00:00:00.000000Z', id: 'evt_x' });
      const other = await get(`${base}/namespaces/a1/credits/ledger?cursor=${foreign}`, app.api_key);
      expect(other.status).to.equal(400);
      expect(other.body.error).to.equal('cursor: is not a next_cursor this list answered');
    });

    it('spends the earliest-expiring grant first; grants once per Idempotency-Key', async () => {
      await creditsCatalog(app, base);
      // No plan grant: a grant with an expiry wakes the account's actor, which would grant the plan's 2,000 at a
      // moment of its own (seen under load: 2,090 where 90 was meant).
      expect((await patch(`${base}/plans/pro/entitlements/credits`, app.api_key, { max: 0 })).status).to.equal(200);
      const day = 86_400_000;
      const inDays = (n: number) => new Date(Date.now() + n * day).toISOString();
      await grant({ pool: 'credits', amount: 50, expires_at: inDays(10) });
      await grant({ pool: 'credits', amount: 50 });
      const promo = { pool: 'credits', amount: 50, expires_at: inDays(5) };
      const first = await grant(promo, 'promo-1');
      const again = await grant(promo, 'promo-1');
      expect(again.status).to.equal(201);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(again.body, 'the same grant answered again').to.deep.equal(first.body);
      expect((await grant({ ...promo, amount: 51 }, 'promo-1')).status, 'the key with another request').to.equal(422);
      expect((await balance()).balance).to.equal(150);
      expect((await amount('basic', 60)).status).to.equal(200);
      const b = await balance();
      expect(b.balance).to.equal(90);
      expect(
        b.grants.map((x: { amount: number; remaining: number; expires_at: string | null }) => [
          x.remaining,
          x.expires_at !== null,
        ]),
      ).to.deep.equal([
        [0, true],
        [40, true],
        [50, false],
      ]);
      const past = await grant({ pool: 'credits', amount: 5, expires_at: inDays(-1) });
      expect(past.status).to.equal(400);
      expect(past.body.error).to.match(/expires_at/);
      expect((await grant({ pool: 'api_calls', amount: 5 })).status).to.equal(400);
      expect((await grant({ pool: 'nope', amount: 5 })).status).to.equal(404);
      expect((await grant({ pool: 'credits', amount: 0 })).status).to.equal(400);
      expect(await ledgerAddsUp(app.id)).to.equal(1);
    });

    it('an unlimited pool on the plan never refuses and debits nothing; no balance refuses', async () => {
      await creditsCatalog(app, base);
      expect((await amount('premium', 1)).status, 'no grant yet: nothing to draw').to.equal(402);
      expect((await patch(`${base}/plans/pro/entitlements/credits`, app.api_key, { max: null })).status).to.equal(200);
      expect((await amount('premium', 1000)).body.count).to.equal(1000);
      const access = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
      expect(access.credits[0]).to.include({ unlimited: true, granted_per_period: null, balance: 0 });
    });

    it('many concurrent writers never over-draw: draws, refunds and grants add up against the real PostgreSQL', async () => {
      await creditsCatalog(app, base);
      await grant({ pool: 'credits', amount: 1000 });
      // 150 draws of 10 credits against 1,000, with grants of 5 and refunds of one premium landing among them.
      const ops = Array.from({ length: 180 }, (_, i) =>
        i % 30 === 0
          ? grant({ pool: 'credits', amount: 5 })
          : i % 30 === 1
            ? amount('premium', -1)
            : amount('premium', 1),
      );
      const results = await Promise.all(ops);
      const draws = results.filter((_, i) => i % 30 > 1);
      const ok = draws.filter((r) => r.status === 200).length;
      const refused = draws.filter((r) => r.status === 402).length;
      expect(ok + refused, draws.map((r) => r.status).join(',')).to.equal(draws.length);
      expect(refused, 'the balance ran out').to.be.greaterThan(0);
      const b = await balance();
      expect(b.balance).to.be.at.least(0);
      const count = (await get(`${base}/namespaces/a1/usage/premium`, app.api_key)).body.count;
      const em = testEnv().deps.orm.em.fork();
      const [refunds] = await sql<{ n: string }>(
        em,
        `select coalesce(sum(amount), 0) as n from credit_ledger where app_id = $1 and kind = 'refund'`,
        [app.id],
      );
      // Every unit counted cost 10 credits; every unit given back returned 10.
      expect(1000 + 6 * 5 + Number(refunds.n) - b.balance).to.equal(ok * 10);
      expect(count * 10).to.equal(ok * 10 - Number(refunds.n));
      expect(await ledgerAddsUp(app.id)).to.equal(1);
    });
  });
});
