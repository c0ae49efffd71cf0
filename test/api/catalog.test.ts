import { expect } from 'chai';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { eventsOf } from '../helpers/events.js';
import { del, get, patch, post } from '../helpers/http.js';

describe('plans', () => {
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}`;
  });

  it('POST normalizes the id, returns the plan, emits plan.created', async () => {
    const res = await post(`${base}/plans`, app.api_key, {
      id: 'Pro Plan!',
      name: 'Pro',
      description: 'For teams',
      note: 'internal',
      isFree: false,
    });
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.include({
      id: 'pro_plan',
      name: 'Pro',
      description: 'For teams',
      note: 'internal',
      isFree: false,
      pricingCard: null,
      meta: {},
      privateMetaKeys: [],
      entitlements: [],
      addons: [],
    });
    const events = await eventsOf(app.id, 'plan.created');
    expect(events).to.have.length(1);
    expect(events[0].data.object.id).to.equal('pro_plan');
  });

  it('409 when the normalized id exists; 400 naming a missing field or an empty id', async () => {
    await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
    const clash = await post(`${base}/plans`, app.api_key, { id: 'PRO', name: 'Pro again' });
    expect(clash.status).to.equal(409);
    expect(clash.body).to.deep.equal({ error: 'Plan pro already exists' });
    expect((await post(`${base}/plans`, app.api_key, { id: 'x' })).body).to.deep.equal({ error: 'name: is required' });
    expect((await post(`${base}/plans`, app.api_key, { id: '---', name: 'x' })).body.error).to.match(
      /^id: must contain/,
    );
  });

  it('lists in creation order; reads one; 404 for a missing one (also when addressed by an unnormalized id)', async () => {
    for (const id of ['zeta', 'alpha', 'mid']) await post(`${base}/plans`, app.api_key, { id, name: id });
    expect((await get(`${base}/plans`, app.api_key)).body.map((p: { id: string }) => p.id)).to.deep.equal([
      'zeta',
      'alpha',
      'mid',
    ]);
    expect((await get(`${base}/plans/ALPHA`, app.api_key)).body.id).to.equal('alpha');
    const missing = await get(`${base}/plans/nope`, app.api_key);
    expect(missing.status).to.equal(404);
    expect(missing.body).to.deep.equal({ error: 'Plan nope not found' });
  });

  it('PATCH merges and emits plan.updated with only the changed fields in previous', async () => {
    await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro', description: 'old' });
    // No PATCH changes an id: sending one is an unknown field (400), and nothing changes.
    const withId = await patch(`${base}/plans/pro`, app.api_key, { description: 'new', id: 'other' });
    expect(withId.status).to.equal(400);
    expect(withId.body.error).to.equal('body: unknown field id');
    const res = await patch(`${base}/plans/pro`, app.api_key, { description: 'new', privateMetaKeys: ['cost'] });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.include({ id: 'pro', name: 'Pro', description: 'new', privateMetaKeys: ['cost'] });
    const [ev] = await eventsOf(app.id, 'plan.updated');
    expect(ev.data.previous).to.deep.equal({ description: 'old', privateMetaKeys: [] });
    expect(ev.data.object.description).to.equal('new');
  });

  it('PATCH /meta merges keys and removes keys sent as null', async () => {
    await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro', meta: { a: 1, b: 2 } });
    const res = await patch(`${base}/plans/pro/meta`, app.api_key, { b: null, c: { nested: true } });
    expect(res.body.meta).to.deep.equal({ a: 1, c: { nested: true } });
    const [ev] = await eventsOf(app.id, 'plan.updated');
    expect(ev.data.previous).to.deep.equal({ meta: { a: 1, b: 2 } });
  });

  it('pricing cards: list and one card for the secret and publishable keys; 404 without a card', async () => {
    await post(`${base}/plans`, app.api_key, {
      id: 'free',
      name: 'Free',
      isFree: true,
      pricingCard: { title: 'Free', monthlyPrice: 0 },
    });
    await post(`${base}/plans`, app.api_key, {
      id: 'pro',
      name: 'Pro',
      pricingCard: { monthlyPrice: 29, yearlyPrice: 290, currency: 'usd', features: ['SSO'] },
    });
    await post(`${base}/plans`, app.api_key, { id: 'internal', name: 'Internal' });
    for (const key of [app.api_key, app.public_key]) {
      const cards = await get(`${base}/plans/pricing`, key);
      expect(cards.status).to.equal(200);
      expect(cards.body).to.deep.equal([
        { plan_id: 'free', title: 'Free', monthlyPrice: 0, isFree: true },
        {
          plan_id: 'pro',
          title: 'Pro',
          monthlyPrice: 29,
          yearlyPrice: 290,
          currency: 'USD',
          features: ['SSO'],
          isFree: false,
        },
      ]);
      expect((await get(`${base}/plans/pro/pricing`, key)).body.currency).to.equal('USD');
      const none = await get(`${base}/plans/internal/pricing`, key);
      expect(none.status).to.equal(404);
      expect(none.body).to.deep.equal({ error: 'Pricing card of plan internal not found' });
    }
    expect((await get(`${base}/plans`, app.public_key)).status).to.equal(401);
    expect(
      (await patch(`${base}/plans/pro`, app.api_key, { pricingCard: { currency: 'dollars' } })).body.error,
    ).to.equal('pricingCard.currency: must be a three-letter currency code');
  });

  it('attach, limit and detach entitlements and add-ons, each emitting plan.updated', async () => {
    await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
    await post(`${base}/entitlements`, app.api_key, { id: 'api_calls', type: 'usage', name: 'API calls' });
    await post(`${base}/entitlements`, app.api_key, { id: 'sso', type: 'boolean', name: 'SSO' });
    await post(`${base}/addons`, app.api_key, { id: 'priority', name: 'Priority support' });

    const a1 = await post(`${base}/plans/pro/entitlements`, app.api_key, { id: 'API Calls', max: 1000 });
    expect(a1.status).to.equal(201);
    expect(a1.body.entitlements).to.deep.equal([{ id: 'api_calls', max: 1000 }]);
    expect((await post(`${base}/plans/pro/entitlements`, app.api_key, { id: 'sso' })).body.entitlements).to.deep.equal([
      { id: 'api_calls', max: 1000 },
      { id: 'sso', max: null },
    ]);
    expect((await post(`${base}/plans/pro/entitlements`, app.api_key, { id: 'api_calls' })).status).to.equal(409);
    expect((await post(`${base}/plans/pro/entitlements`, app.api_key, { id: 'nope' })).body).to.deep.equal({
      error: 'Entitlement nope not found',
    });
    expect((await post(`${base}/plans/pro/entitlements`, app.api_key, { id: 'api_calls', max: -1 })).status).to.equal(
      400,
    );

    expect(
      (await patch(`${base}/plans/pro/entitlements/api_calls`, app.api_key, { max: null })).body.entitlements[0],
    ).to.deep.equal({ id: 'api_calls', max: null });
    expect((await patch(`${base}/plans/pro/entitlements/api_calls`, app.api_key, {})).body).to.deep.equal({
      error: 'max: is required',
    });
    expect((await post(`${base}/plans/pro/addons`, app.api_key, { id: 'priority' })).body.addons).to.deep.equal([
      'priority',
    ]);
    expect((await del(`${base}/plans/pro/entitlements/sso`, app.api_key)).body.entitlements).to.deep.equal([
      { id: 'api_calls', max: null },
    ]);
    expect((await del(`${base}/plans/pro/entitlements/sso`, app.api_key)).status).to.equal(404);
    expect((await del(`${base}/plans/pro/addons/priority`, app.api_key)).body.addons).to.deep.equal([]);

    const updates = await eventsOf(app.id, 'plan.updated');
    expect(updates.map((e) => Object.keys(e.data.previous))).to.deep.equal([
      ['entitlements'],
      ['entitlements'],
      ['entitlements'],
      ['addons'],
      ['entitlements'],
      ['addons'],
    ]);
    expect(updates[2].data.previous.entitlements).to.deep.equal([
      { id: 'api_calls', max: 1000 },
      { id: 'sso', max: null },
    ]);
  });

  it('DELETE removes the plan, emits plan.deleted; 404 afterwards', async () => {
    await post(`${base}/plans`, app.api_key, { id: 'old', name: 'Old' });
    const res = await del(`${base}/plans/old`, app.api_key);
    expect(res.status).to.equal(200);
    expect(res.body.id).to.equal('old');
    expect((await get(`${base}/plans/old`, app.api_key)).status).to.equal(404);
    expect((await eventsOf(app.id, 'plan.deleted'))[0].data.object.id).to.equal('old');
  });
});

describe('entitlements', () => {
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}`;
  });

  it('create, read, list, update overage; the type is required and fixed', async () => {
    const c = await post(`${base}/entitlements`, app.api_key, { id: 'Seats', type: 'usage', name: 'Seats' });
    expect(c.status).to.equal(201);
    expect(c.body).to.deep.include({
      id: 'seats',
      type: 'usage',
      name: 'Seats',
      description: null,
      overage: { mode: 'allow', offer_id: null },
    });
    expect((await post(`${base}/entitlements`, app.api_key, { id: 'x', name: 'X' })).body).to.deep.equal({
      error: 'type: Invalid option: expected one of "usage"|"boolean"|"credits"',
    });
    expect(
      (await post(`${base}/entitlements`, app.api_key, { id: 'seats', type: 'boolean', name: 'dup' })).status,
    ).to.equal(409);
    // The type is fixed: sending it is an unknown field of PATCH (400), and nothing changes.
    const typed = await patch(`${base}/entitlements/seats`, app.api_key, {
      overage: { mode: 'block', offer_id: 'more_seats' },
      type: 'boolean',
    });
    expect(typed.status).to.equal(400);
    expect(typed.body.error).to.equal('body: unknown field type');
    const u = await patch(`${base}/entitlements/seats`, app.api_key, {
      overage: { mode: 'block', offer_id: 'more_seats' },
    });
    expect(u.body).to.deep.include({ type: 'usage', overage: { mode: 'block', offer_id: 'more_seats' } });
    expect(
      (await patch(`${base}/entitlements/seats`, app.api_key, { overage: { mode: 'sometimes' } })).status,
    ).to.equal(400);
    expect((await get(`${base}/entitlements/seats`, app.api_key)).body.overage.mode).to.equal('block');
    expect((await get(`${base}/entitlements`, app.api_key)).body).to.have.length(1);
  });

  it('DELETE is refused (409, naming where) while the entitlement is on a plan or incentive', async () => {
    await post(`${base}/entitlements`, app.api_key, { id: 'seats', type: 'usage', name: 'Seats' });
    await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
    await post(`${base}/plans/pro/entitlements`, app.api_key, { id: 'seats', max: 5 });
    await post(`${base}/incentives`, app.api_key, {
      id: 'promo',
      name: 'Promo',
      entitlements: [{ id: 'seats', max: 50 }],
    });
    const refused = await del(`${base}/entitlements/seats`, app.api_key);
    expect(refused.status).to.equal(409);
    expect(refused.body).to.deep.include({ plans: ['pro'], incentives: ['promo'] });
    await del(`${base}/plans/pro/entitlements/seats`, app.api_key);
    await del(`${base}/incentives/promo/entitlements/seats`, app.api_key);
    expect((await del(`${base}/entitlements/seats`, app.api_key)).status).to.equal(200);
    expect((await get(`${base}/entitlements/seats`, app.api_key)).status).to.equal(404);
  });
});

describe('add-ons', () => {
  it('CRUD; DELETE refused while on a plan', async () => {
    const app = await createTestApp();
    const base = `/apps/${app.id}`;
    expect(
      (await post(`${base}/addons`, app.api_key, { id: 'Extra Storage', name: 'Extra storage' })).body.id,
    ).to.equal('extra_storage');
    expect((await patch(`${base}/addons/extra_storage`, app.api_key, { description: '100 GB' })).body).to.deep.include({
      name: 'Extra storage',
      description: '100 GB',
    });
    await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
    await post(`${base}/plans/pro/addons`, app.api_key, { id: 'extra_storage' });
    const refused = await del(`${base}/addons/extra_storage`, app.api_key);
    expect(refused.status).to.equal(409);
    expect(refused.body.plans).to.deep.equal(['pro']);
    await del(`${base}/plans/pro/addons/extra_storage`, app.api_key);
    expect((await del(`${base}/addons/extra_storage`, app.api_key)).status).to.equal(200);
    expect((await get(`${base}/addons`, app.api_key)).body).to.deep.equal([]);
  });
});

describe('incentives', () => {
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}`;
    await post(`${base}/entitlements`, app.api_key, { id: 'api_calls', type: 'usage', name: 'API calls' });
    await post(`${base}/entitlements`, app.api_key, { id: 'seats', type: 'usage', name: 'Seats' });
    await post(`${base}/addons`, app.api_key, { id: 'priority', name: 'Priority' });
  });

  it('create with overrides and add-ons; 404 naming an unknown one; emits incentive.created', async () => {
    const res = await post(`${base}/incentives`, app.api_key, {
      id: 'Launch Promo',
      name: 'Launch',
      entitlements: [{ id: 'api_calls', max: 5000 }, { id: 'seats' }],
      addons: ['priority'],
    });
    expect(res.status).to.equal(201);
    expect(res.body).to.deep.include({
      id: 'launch_promo',
      entitlements: [
        { id: 'api_calls', max: 5000 },
        { id: 'seats', max: null },
      ],
      addons: ['priority'],
    });
    const bad = await post(`${base}/incentives`, app.api_key, {
      id: 'bad',
      name: 'Bad',
      entitlements: [{ id: 'ghost' }],
    });
    expect(bad.status).to.equal(404);
    expect(bad.body).to.deep.equal({ error: 'Entitlement ghost not found' });
    expect((await get(`${base}/incentives/bad`, app.api_key)).status, 'nothing half-written').to.equal(404);
    expect((await eventsOf(app.id, 'incentive.created')).map((e) => e.data.object.id)).to.deep.equal(['launch_promo']);
  });

  it('override routes and PATCH replacing lists emit incentive.updated with previous', async () => {
    await post(`${base}/incentives`, app.api_key, { id: 'promo', name: 'Promo' });
    expect(
      (await post(`${base}/incentives/promo/entitlements`, app.api_key, { id: 'api_calls', max: 10 })).status,
    ).to.equal(201);
    expect(
      (await patch(`${base}/incentives/promo/entitlements/api_calls`, app.api_key, { max: 20 })).body.entitlements,
    ).to.deep.equal([{ id: 'api_calls', max: 20 }]);
    expect((await post(`${base}/incentives/promo/addons`, app.api_key, { id: 'priority' })).body.addons).to.deep.equal([
      'priority',
    ]);
    const replaced = await patch(`${base}/incentives/promo`, app.api_key, {
      name: 'Promo 2',
      entitlements: [{ id: 'seats', max: 3 }],
    });
    expect(replaced.body).to.deep.include({
      name: 'Promo 2',
      entitlements: [{ id: 'seats', max: 3 }],
      addons: ['priority'],
    });
    expect((await del(`${base}/incentives/promo/addons/priority`, app.api_key)).body.addons).to.deep.equal([]);
    expect((await del(`${base}/incentives/promo/entitlements/api_calls`, app.api_key)).status).to.equal(404);
    const updates = await eventsOf(app.id, 'incentive.updated');
    expect(updates).to.have.length(5);
    expect(updates[3].data.previous).to.deep.equal({ name: 'Promo', entitlements: [{ id: 'api_calls', max: 20 }] });
  });

  it('DELETE emits incentive.deleted', async () => {
    await post(`${base}/incentives`, app.api_key, { id: 'gone', name: 'Gone' });
    expect((await del(`${base}/incentives/gone`, app.api_key)).status).to.equal(200);
    expect((await eventsOf(app.id, 'incentive.deleted'))[0].data.object.id).to.equal('gone');
  });
});
