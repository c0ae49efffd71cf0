// Credits over time (issue 42, item 2): the plan's grant each month from the account's actor, expiry and rollover on
// the app's clock, moved by the test clock.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const DAY = 86_400_000;

describe('credits over time: plan grants, expiry and rollover on the test clock', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;

  const clock = async () => Date.parse((await get(`${base}/test-clock`, app.api_key)).body.now);
  const advanceBy = async (ms: number) => {
    const res = await post(`${base}/test-clock/advance`, app.api_key, {
      to: new Date((await clock()) + ms).toISOString(),
    });
    expect(res.status, res.text).to.equal(200);
  };
  const credits = async () => {
    const res = await get(`${base}/namespaces/a1/credits`, app.api_key);
    expect(res.status, res.text).to.equal(200);
    return res.body.data[0] as {
      balance: number;
      grants: { source: string; amount: number; remaining: number; expires_at: string | null }[];
    };
  };
  const ledgerSum = async () => {
    const [r] = await sql<{ sum: string; balance: string }>(
      testEnv().deps.orm.em.fork(),
      `select (select coalesce(sum(amount), 0) from credit_ledger where app_id = $1) as sum,
              (select coalesce(sum(balance), 0) from credit_balances where app_id = $1) as balance`,
      [app.id],
    );
    expect(Number(r.sum), 'the balance is the ledger sum').to.equal(Number(r.balance));
    return Number(r.balance);
  };

  beforeEach(async () => {
    ({ app, base } = await seededApp());
    const ok = async (path: string, body: unknown) => {
      const res = await post(`${base}${path}`, app.api_key, body);
      expect(res.status, `${path} ${res.text}`).to.equal(201);
    };
    await ok('/entitlements', {
      id: 'credits',
      type: 'credits',
      name: 'AI credits',
      credits: { rollover: { cap: 500 } },
    });
    await ok('/entitlements', {
      id: 'premium',
      type: 'usage',
      name: 'Premium',
      credits: { pool: 'credits', cost: 10 },
    });
    await ok('/plans/pro/entitlements', { id: 'premium', max: null });
    await ok('/plans/pro/entitlements', { id: 'credits', max: 2000 });
  });

  it('grants the plan credits when the account is put on the plan, then monthly; unused ones roll over up to the cap', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro' });
    // The actor grants the first period at once (app time), expiring at the period end.
    const first = await eventually(async () => {
      const c = await credits();
      return c.balance === 2000 && c;
    });
    expect(first.grants).to.have.length(1);
    expect(first.grants[0]).to.include({ source: 'plan', amount: 2000, remaining: 2000 });
    const periodEnd = Date.parse(first.grants[0].expires_at!);
    expect(periodEnd - (await clock())).to.be.within(27 * DAY, 32 * DAY);

    // A support grant that expires in 5 days is spent first.
    const now = await clock();
    const g = await call('POST', `${base}/namespaces/a1/credits/grants`, {
      token: app.api_key,
      body: { pool: 'credits', amount: 100, expires_at: new Date(now + 5 * DAY).toISOString(), reason: 'support' },
    });
    expect(g.status, g.text).to.equal(201);
    expect((await post(`${base}/namespaces/a1/usage/premium/amount`, app.api_key, { amount: 170 })).status).to.equal(
      200,
    );
    expect((await credits()).balance).to.equal(400);

    // Day 6: the support grant's date passes; it was spent, so nothing expires.
    await advanceBy(6 * DAY);
    const mid = await credits();
    expect(mid.balance).to.equal(400);
    expect(mid.grants.map((x) => [x.source, x.remaining])).to.deep.equal([['plan', 400]]);

    // The period ends: its 400 unused credits roll over (cap 500), and the next period's 2,000 come.
    await advanceBy(periodEnd - (await clock()) + 60_000);
    const next = await eventually(async () => {
      const c = await credits();
      return c.grants.length === 2 && c;
    });
    expect(next.balance).to.equal(2400);
    expect(next.grants.map((x) => [x.source, x.remaining]).sort()).to.deep.equal([
      ['plan', 2000],
      ['rollover', 400],
    ]);
    expect(await ledgerSum()).to.equal(2400);
    const ledger = (await get(`${base}/namespaces/a1/credits/ledger`, app.api_key)).body.data as {
      kind: string;
      amount: number;
      workflow_id: string | null;
    }[];
    expect(ledger.filter((l) => l.kind === 'expiry').map((l) => l.amount)).to.deep.equal([-400]);
    expect(ledger.find((l) => l.kind === 'expiry')!.workflow_id).to.equal(`account/${app.id}/a1`);
  });

  it('without rollover, unused plan credits expire at the period end (an expiry ledger row)', async () => {
    expect(
      (await patch(`${base}/entitlements/credits`, app.api_key, { credits: { rollover: 'none' } })).status,
    ).to.equal(200);
    await createAccount(app, { id: 'a1', plan: 'pro' });
    const first = await eventually(async () => {
      const c = await credits();
      return c.balance === 2000 && c;
    });
    await advanceBy(Date.parse(first.grants[0].expires_at!) - (await clock()) + 60_000);
    const next = await eventually(async () => {
      const c = await credits();
      return c.grants.length === 1 && c.grants[0].expires_at !== first.grants[0].expires_at && c;
    });
    expect(next.balance).to.equal(2000);
    const ledger = (await get(`${base}/namespaces/a1/credits/ledger`, app.api_key)).body.data as {
      kind: string;
      amount: number;
    }[];
    expect(ledger.map((l) => [l.kind, l.amount])).to.deep.equal([
      ['grant', 2000],
      ['expiry', -2000],
      ['grant', 2000],
    ]);
    expect(await ledgerSum()).to.equal(2000);
  });
});
