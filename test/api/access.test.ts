import { expect } from 'chai';
import { access } from '../../src/access/access.service.js';
import { poolOf, sql } from '../../src/db/sql.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

/** Stand-in for a purchase: layer-2 extras and an active subscription, as checkout completion writes them. */
async function grantExtras(
  appId: string,
  accountId: string,
  rows: { kind: 'entitlement' | 'addon'; ref: string; max?: number | null; endsAt?: Date | null }[],
) {
  const em = testEnv().deps.orm.em.fork();
  await sql(
    em,
    `insert into subscriptions (app_id, account_id, provider_subscription_id, offer_id, plan_id, interval, currency,
      price, status)
     values ($1, $2, 'I-STANDIN', 'launch_offer', 'pro', 'month', 'USD', 19, 'active') on conflict do nothing`,
    [appId, accountId],
  );
  for (const r of rows) {
    await sql(
      em,
      'insert into account_extras (app_id, account_id, offer_id, kind, ref_id, max, ends_at) values ($1, $2, $3, ' +
        '$4, $5, $6, $7)',
      [appId, accountId, 'launch_offer', r.kind, r.ref, r.max ?? null, r.endsAt ?? null],
    );
  }
}

/** Sets an incentive expiry directly in the database, so no expiry workflow runs. */
async function setExpiryWithoutWorkflow(appId: string, accountId: string, at: Date) {
  await sql(
    testEnv().deps.orm.em.fork(),
    'update accounts set incentive_expires_at = $3 where app_id = $1 and id = $2',
    [appId, accountId, at],
  );
}

const byId = (entries: { id: string; max: number | null }[]) => Object.fromEntries(entries.map((e) => [e.id, e]));

describe('effective access (GET /plan, /full-plan)', () => {
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp());
    await post(`${base}/incentives`, app.api_key, {
      id: 'partner',
      name: 'Partner deal',
      entitlements: [{ id: 'api_calls', max: 5000 }, { id: 'beta' }],
      addons: ['storage'],
    });
  });

  it('rule 1: the plan sets the entitlements, with usage, max, left and can', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro' });
    for (let i = 0; i < 3; i++) await post(`${base}/namespaces/a1/usage/api_calls/add`, app.api_key);
    const res = await get(`${base}/namespaces/a1/plan`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body.plan).to.deep.equal({
      id: 'pro',
      name: 'Pro',
      description: null,
      isFree: false,
      meta: { color: 'blue' },
    });
    expect(res.body).to.deep.include({ incentive: null, offer: null, addons: ['priority'] });
    expect(res.body.entitlements).to.deep.equal([
      {
        id: 'api_calls',
        feature: 'api_calls',
        name: 'API calls',
        type: 'usage',
        usage: 3,
        max: 1000,
        left: 997,
        can: true,
      },
      { id: 'seats', feature: 'seats', name: 'Seats', type: 'usage', usage: 0, max: 5, left: 5, can: true },
      { id: 'sso', feature: 'sso', name: 'SSO', type: 'boolean', usage: 0, max: null, left: null, can: true },
    ]);
  });

  it('unlimited: max and left null, can true', async () => {
    await createAccount(app, { id: 'big', plan: 'scale' });
    const e = byId((await get(`${base}/namespaces/big/plan`, app.api_key)).body.entitlements);
    expect(e.api_calls).to.deep.include({ max: null, left: null, can: true });
  });

  it('left never goes below 0 and can turns false at the limit (soft limit counts past it)', async () => {
    await createAccount(app, { id: 'a1', plan: 'free' });
    await post(`${base}/namespaces/a1/usage/api_calls/amount`, app.api_key, { amount: 150 });
    const e = byId((await get(`${base}/namespaces/a1/plan`, app.api_key)).body.entitlements);
    expect(e.api_calls).to.deep.include({ usage: 150, max: 100, left: 0, can: false });
  });

  it('rules 2 and 3: offer extras override the plan, the incentive overrides both, until each ends', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro' });
    await grantExtras(app.id, 'a1', [
      { kind: 'entitlement', ref: 'api_calls', max: 2000 },
      { kind: 'entitlement', ref: 'seats', max: 10 },
      { kind: 'entitlement', ref: 'sso', endsAt: new Date(Date.now() - 1000) },
      { kind: 'addon', ref: 'storage' },
    ]);
    let body = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
    let e = byId(body.entitlements);
    expect(e.api_calls.max, 'layer 2 over layer 1').to.equal(2000);
    expect(e.seats.max).to.equal(10);
    expect(body.addons).to.deep.equal(['priority', 'storage']);

    // Extras apply only while the subscription is active.
    const setStatus = (status: string) =>
      sql(testEnv().deps.orm.em.fork(), 'update subscriptions set status = $3 where app_id = $1 and account_id = $2', [
        app.id,
        'a1',
        status,
      ]);
    await setStatus('paused');
    expect(
      byId((await get(`${base}/namespaces/a1/plan`, app.api_key)).body.entitlements).api_calls.max,
      'paused: layer 1 only',
    ).to.equal(1000);
    await setStatus('active');

    await call('PATCH', `${base}/namespaces/a1`, { token: app.api_key, body: { incentive: 'partner' } });
    body = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
    e = byId(body.entitlements);
    expect(body.incentive).to.equal('partner');
    expect(e.api_calls.max, 'layer 3 over layers 1 and 2').to.equal(5000);
    expect(e.seats.max, 'layer 2 where the incentive says nothing').to.equal(10);

    // An incentive whose expiry passed no longer applies, even before its workflow removed it.
    await setExpiryWithoutWorkflow(app.id, 'a1', new Date(Date.now() - 1000));
    body = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
    expect(body.incentive).to.equal(null);
    expect(byId(body.entitlements).api_calls.max).to.equal(2000);

    // Extras that have ended no longer apply either.
    await sql(
      testEnv().deps.orm.em.fork(),
      "update account_extras set ends_at = now() - interval '1 second' where app_id = $1",
      [app.id],
    );
    body = (await get(`${base}/namespaces/a1/plan`, app.api_key)).body;
    expect(byId(body.entitlements).api_calls.max).to.equal(1000);
    expect(body.addons).to.deep.equal(['priority']);
  });

  it('rule 4: add-ons of plan, extras, incentive and the account own are merged', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'partner' });
    await post(`${base}/addons`, app.api_key, { id: 'vip', name: 'VIP' });
    await post(`${base}/addons`, app.api_key, { id: 'extra', name: 'Extra' });
    await post(`${base}/namespaces/a1/addons`, app.api_key, { id: 'vip' });
    await grantExtras(app.id, 'a1', [{ kind: 'addon', ref: 'extra' }]);
    expect((await get(`${base}/namespaces/a1/plan`, app.api_key)).body.addons).to.deep.equal([
      'extra',
      'priority',
      'storage',
      'vip',
    ]);
  });

  it('rule 5: a boolean entitlement the plan does not include is absent, even when a later layer names it', async () => {
    await createAccount(app, { id: 'a1', plan: 'free', incentive: 'partner' });
    const e = byId((await get(`${base}/namespaces/a1/plan`, app.api_key)).body.entitlements);
    expect(e).to.not.have.property('beta');
    expect(e).to.not.have.property('sso');
    expect(e.api_calls.max, 'a usage override still applies').to.equal(5000);
  });

  it('rule 6: /plan hides private meta keys, /full-plan shows them; the publishable key may read only /plan', async () => {
    await createAccount(app, { id: 'a1', plan: 'pro' });
    expect((await get(`${base}/namespaces/a1/plan`, app.public_key)).body.plan.meta).to.deep.equal({ color: 'blue' });
    expect((await get(`${base}/namespaces/a1/full-plan`, app.api_key)).body.plan.meta).to.deep.equal({
      color: 'blue',
      cost: 7,
    });
    expect((await get(`${base}/namespaces/a1/full-plan`, app.public_key)).status).to.equal(401);
  });

  it('a batch read as one set statement answers every account as a read of its own does, across apps', async () => {
    // Every layer and a missing account, in two apps: the set form (EFFECTIVE_ACCESS_SET_SQL) against the statement.
    await createAccount(app, { id: 'a1', plan: 'pro', incentive: 'partner' });
    await createAccount(app, { id: 'a2', plan: 'free', incentive: 'partner' });
    await setExpiryWithoutWorkflow(app.id, 'a2', new Date(Date.now() - 1000));
    await createAccount(app, { id: 'a3', plan: 'scale' });
    await post(`${base}/namespaces/a3/addons`, app.api_key, { id: 'storage' });
    await createAccount(app, { id: 'a4', plan: 'pro' });
    await grantExtras(app.id, 'a4', [
      { kind: 'entitlement', ref: 'api_calls', max: 2000 },
      { kind: 'addon', ref: 'storage' },
    ]);
    await post(`${base}/namespaces/a4/usage/api_calls/amount`, app.api_key, { amount: 12 });
    expect((await post(`${base}/namespaces/a4/usage/seats/reservations`, app.api_key, { amount: 2 })).status).to.equal(
      201,
    );
    // An id with what an array literal quotes: braces, a comma, quotes, a backslash, NULL, spaces at both ends.
    const odd = ' we{ird}, "q" \\ NULL ';
    await createAccount(app, { id: odd, plan: 'free' });
    const { app: other } = await seededApp();
    await createAccount(other, { id: 'a1', plan: 'free' });

    const em = testEnv().deps.orm.em.fork();
    const runs = [
      ...['a1', 'a2', 'a3', 'a4', 'ghost', odd].map((id) => [app.id, id]),
      [other.id, 'a1'],
      [other.id, 'a4'],
    ];
    const alone = await Promise.all(runs.map((p) => access.alone(em, p)));
    expect(alone.map((rows) => rows.length)).to.deep.equal([1, 1, 1, 1, 0, 1, 1, 0]);
    const pool = await poolOf(em);
    const before = { ...access.stats };
    // Each run three times, all at once: they meet in batches, some holding one account twice.
    const together = await Promise.all([...runs, ...runs, ...runs].map((p) => access.onPool(pool, p)));
    expect(access.stats.batches - before.batches, 'the reads went out as batches').to.be.greaterThan(0);
    expect(access.stats.fallbacks - before.fallbacks, 'each batch answered as a set').to.equal(0);
    together.forEach((rows, i) => expect(rows, runs[i % runs.length].join('/')).to.deep.equal(alone[i % runs.length]));
  });

  it('404 for an unknown account', async () => {
    expect((await get(`${base}/namespaces/ghost/plan`, app.api_key)).body).to.deep.equal({
      error: 'Account ghost not found',
    });
  });
});
