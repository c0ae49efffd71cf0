import { expect } from 'chai';
import {
  connectBilling,
  connectProvider,
  createAccount,
  paypalClientOf,
  seededApp,
  type TestApp,
} from '../helpers/factories.js';
import { del, get, patch, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('offers', () => {
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp());
  });
  const connect = () => connectProvider(app);
  const spring = {
    id: 'Spring Sale',
    name: 'Spring sale',
    plans: [
      {
        plan: 'pro',
        prices: [
          { interval: 'month', amount: 19, currency: 'usd', cycles: 3 },
          { interval: 'year', amount: 199 },
        ],
        extras: { entitlements: [{ id: 'api_calls', max: 5000 }], addons: ['storage'], cycles: 6 },
      },
    ],
    bumps: [{ id: 'priority', name: 'Priority support', addon: 'priority', price: 9 }],
  };

  it('creates a shareable draft (normalized slug) and a targeted one (unguessable id); 409 for a taken slug', async () => {
    const res = await post(`${base}/offers`, app.api_key, spring);
    expect(res.status, res.text).to.equal(201);
    expect(res.body).to.deep.include({
      id: 'spring_sale',
      kind: 'shareable',
      status: 'draft',
      live_status: 'draft',
      redemptions: 0,
      published: false,
      account_id: null,
    });
    expect(res.body.plans[0].prices).to.deep.equal([
      { interval: 'month', currency: 'USD', amount: 19, cycles: 3 },
      { interval: 'year', currency: 'USD', amount: 199, cycles: null },
    ]);
    expect((await post(`${base}/offers`, app.api_key, spring)).status).to.equal(409);
    await createAccount(app, { id: 'vip', plan: 'free' });
    const targeted = await post(`${base}/offers`, app.api_key, {
      ...spring,
      id: undefined,
      account_id: 'vip',
      name: 'Just for you',
    });
    expect(targeted.status).to.equal(201);
    expect(targeted.body).to.deep.include({ kind: 'targeted', account_id: 'vip' });
    expect(targeted.body.id).to.match(/^ofr_[0-9A-Za-z]{20}$/);
    expect((await get(`${base}/offers`, app.api_key)).body.map((o: { id: string }) => o.id)).to.deep.equal([
      'spring_sale',
      targeted.body.id,
    ]);
  });

  it('400 naming the problem (both or neither id), 404 an unknown plan, add-on or entitlement, 409 intro cycles', async () => {
    const bad = async (body: unknown) => (await post(`${base}/offers`, app.api_key, body)).body.error;
    const status = async (body: unknown) => (await post(`${base}/offers`, app.api_key, body)).status;
    expect(await status({ ...spring, account_id: 'vip' })).to.equal(400);
    expect(await status({ ...spring, plans: [{ ...spring.plans[0], plan: 'gold' }] })).to.equal(404);
    expect(await status({ ...spring, bumps: [{ id: 'x', name: 'X', addon: 'nope', price: 1 }] })).to.equal(404);
    expect(
      await status({ ...spring, plans: [{ plan: 'scale', prices: [{ interval: 'year', amount: 500, cycles: 1 }] }] }),
    ).to.equal(409);
    expect(await bad({ ...spring, account_id: 'vip' })).to.equal(
      'id: a shareable offer takes an id, a targeted offer an account_id (not both)',
    );
    expect(await bad({ ...spring, id: undefined })).to.equal(
      'id: a shareable offer takes an id, a targeted offer an account_id (not both)',
    );
    expect(await bad({ ...spring, plans: [{ ...spring.plans[0], plan: 'gold' }] })).to.equal(
      'plans.0.plan: plan gold does not exist',
    );
    expect(await bad({ ...spring, bumps: [{ id: 'x', name: 'X', addon: 'nope', price: 1 }] })).to.equal(
      'bumps.0.addon: add-on nope does not exist',
    );
    expect(
      await bad({ ...spring, plans: [{ plan: 'scale', prices: [{ interval: 'year', amount: 500, cycles: 1 }] }] }),
    ).to.equal('plans.0.prices.0.cycles: plan scale has no regular yearly USD price to continue at after 1 cycles');
    expect(
      await bad({ ...spring, plans: [{ ...spring.plans[0], extras: { entitlements: [{ id: 'ghost' }] } }] }),
    ).to.equal('plans.0.extras.entitlements.0.id: entitlement ghost does not exist');
    expect(
      await bad({
        ...spring,
        plans: [
          {
            plan: 'pro',
            prices: [
              { interval: 'month', amount: 1 },
              { interval: 'month', amount: 2 },
            ],
          },
        ],
      }),
    ).to.equal('plans.0.prices: must not repeat an interval and currency');
    const targetMissing = await post(`${base}/offers`, app.api_key, { ...spring, id: undefined, account_id: 'ghost' });
    expect(targetMissing.status).to.equal(404);
  });

  it('publish needs the provider (409), then creates its product and billing plans there and goes active; archive stops it', async () => {
    await post(`${base}/offers`, app.api_key, spring);
    const early = await post(`${base}/offers/spring_sale/publish`, app.api_key);
    expect(early.status).to.equal(409);
    expect(early.body).to.deep.equal({ error: 'payment provider not connected' });
    await connect();
    const published = await post(`${base}/offers/spring_sale/publish`, app.api_key);
    expect(published.status, published.text).to.equal(200);
    expect(published.body).to.deep.include({ status: 'active', live_status: 'active', published: true });
    expect(published.body.published_at).to.be.a('string');
    const again = await post(`${base}/offers/spring_sale/publish`, app.api_key);
    expect(again.body.published_at, 'publishing twice changes nothing').to.equal(published.body.published_at);

    // Editing a live offer adds the provider plan its new price needs.
    const edited = await patch(`${base}/offers/spring_sale`, app.api_key, {
      plans: [...spring.plans, { plan: 'scale', prices: [{ interval: 'month', amount: 79 }] }],
    });
    expect(edited.status, edited.text).to.equal(200);
    expect(edited.body.plans).to.have.length(2);

    // This app's calls only: another test's account actor may call the stand-in meanwhile.
    const ours = paypalClientOf(app).client_id;
    testEnv().paypal.failNext(500, 'INTERNAL_SERVER_ERROR', 'An internal server error has occurred', 1, ours);
    const failing = await patch(`${base}/offers/spring_sale`, app.api_key, {
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 17 }] }],
    });
    expect(failing.status).to.equal(502);
    expect(failing.body.error).to.equal('PayPal: An internal server error has occurred');

    expect((await post(`${base}/offers/spring_sale/archive`, app.api_key)).body).to.deep.include({
      status: 'archived',
      live_status: 'archived',
    });
    const republish = await post(`${base}/offers/spring_sale/publish`, app.api_key);
    expect(republish.status).to.equal(409);
    expect(republish.body.reason).to.equal('archived');
  });

  it('public view: the offer, else the fallback in the query, else its own fallback, else regular prices; never 404', async () => {
    await connect();
    await post(`${base}/offers`, app.api_key, spring);
    await post(`${base}/offers`, app.api_key, {
      ...spring,
      id: 'evergreen',
      name: 'Evergreen',
      plans: [{ plan: 'scale', prices: [{ interval: 'month', amount: 89 }] }],
    });
    await post(`${base}/offers/evergreen/publish`, app.api_key);
    const view = (id: string, q = '') => get(`${base}/offers/${id}/public${q}`, app.public_key);

    const draft = await view('spring_sale');
    expect(draft.status).to.equal(200);
    expect(draft.body.source, 'a draft is not shown').to.equal('regular');
    expect(draft.body.plans.map((p: { plan: { id: string } }) => p.plan.id)).to.deep.equal(['free', 'pro', 'scale']);

    await post(`${base}/offers/spring_sale/publish`, app.api_key);
    const live = await view('spring_sale', '?ref=newsletter');
    expect(live.body).to.deep.include({ source: 'offer', ref: 'newsletter' });
    expect(live.body.offer).to.deep.include({ id: 'spring_sale', name: 'Spring sale' });
    expect(live.body.plans[0]).to.deep.include({
      plan: { id: 'pro', name: 'Pro', description: null },
      prices: [
        { interval: 'month', currency: 'USD', price: 19, list_price: 29, cycles: 3 },
        { interval: 'year', currency: 'USD', price: 199, list_price: 290, cycles: null },
      ],
    });
    expect(live.body.plans[0].entitlements).to.deep.include.members([
      { id: 'api_calls', name: 'API calls', type: 'usage', max: 5000 },
      { id: 'sso', name: 'SSO', type: 'boolean', max: null },
    ]);
    expect(live.body.bumps).to.deep.equal([{ id: 'priority', name: 'Priority support', price: 9, currency: 'USD' }]);

    await post(`${base}/offers/spring_sale/archive`, app.api_key);
    expect((await view('spring_sale', '?fallback=evergreen')).body).to.deep.include({ source: 'fallback' });
    expect((await view('spring_sale', '?fallback=evergreen')).body.offer.id).to.equal('evergreen');
    await patch(`${base}/offers/spring_sale`, app.api_key, { fallback: 'evergreen' });
    expect((await view('spring_sale')).body.offer.id, 'its own fallback').to.equal('evergreen');
    expect((await view('no_such_offer')).body.source).to.equal('regular');
    expect((await get(`${base}/offers/evergreen`, app.api_key)).body.views, 'each time it was shown').to.equal(3);

    await patch(`${base}/offers/evergreen`, app.api_key, { expires_at: '2020-01-01T00:00:00Z' });
    expect((await view('evergreen')).body.source, 'expired').to.equal('regular');
    expect((await get(`${base}/offers/evergreen`, app.api_key)).body.live_status).to.equal('expired');
  });

  it('a targeted offer shows only to its account', async () => {
    await connect();
    await createAccount(app, { id: 'vip', plan: 'free' });
    const t = (await post(`${base}/offers`, app.api_key, { ...spring, id: undefined, account_id: 'vip' })).body;
    await post(`${base}/offers/${t.id}/publish`, app.api_key);
    expect((await get(`${base}/offers/${t.id}/public?account=vip`, app.public_key)).body.source).to.equal('offer');
    expect((await get(`${base}/offers/${t.id}/public?account=someone`, app.public_key)).body.source).to.equal(
      'regular',
    );
    expect((await get(`${base}/offers/${t.id}/public`, app.public_key)).body.source).to.equal('regular');
  });

  it('draft-preview validates and shows unsaved fields without storing; preview shows changes for an account', async () => {
    const dp = await post(`${base}/offers/draft-preview`, app.api_key, spring);
    expect(dp.status).to.equal(200);
    expect(dp.body.plans[0].prices[0]).to.deep.include({ price: 19, list_price: 29 });
    expect((await get(`${base}/offers/spring_sale`, app.api_key)).status).to.equal(404);
    expect(
      (
        await post(`${base}/offers/draft-preview`, app.api_key, {
          ...spring,
          plans: [{ ...spring.plans[0], plan: 'gold' }],
        })
      ).status,
    ).to.equal(404);

    await post(`${base}/offers`, app.api_key, spring);
    await createAccount(app, { id: 'a1', plan: 'free' });
    const pv = await post(`${base}/offers/spring_sale/preview`, app.api_key, { account: 'a1' });
    expect(pv.body.account).to.deep.equal({ id: 'a1', plan: 'free' });
    expect(pv.body.plans[0].changes).to.deep.include({ entitlement: 'api_calls', current: 100, new: 5000 });
    expect(pv.body.plans[0].changes).to.deep.include({ entitlement: 'sso', current: 0, new: null });
  });

  it('delete removes the offer, any fallback and any entitlement upgrade pointing at it; secret key only', async () => {
    await post(`${base}/offers`, app.api_key, spring);
    await post(`${base}/offers`, app.api_key, { ...spring, id: 'other', fallback: 'spring_sale' });
    const overage = (offer: string) => ({ overage: { mode: 'block', offer_id: offer } });
    expect((await patch(`${base}/entitlements/api_calls`, app.api_key, overage('spring_sale'))).status).to.equal(200);
    expect((await patch(`${base}/entitlements/seats`, app.api_key, overage('other'))).status).to.equal(200);
    expect((await del(`${base}/offers/spring_sale`, app.api_key)).status).to.equal(200);
    expect((await get(`${base}/offers/spring_sale`, app.api_key)).status).to.equal(404);
    expect((await get(`${base}/offers/other`, app.api_key)).body.fallback).to.equal(null);
    // The entitlement keeps its mode and loses only the pointer; another offer's pointer stays.
    expect((await get(`${base}/entitlements/api_calls`, app.api_key)).body.overage).to.deep.equal({
      mode: 'block',
      offer_id: null,
    });
    expect((await get(`${base}/entitlements/seats`, app.api_key)).body.overage).to.deep.equal({
      mode: 'block',
      offer_id: 'other',
    });
    // A new offer with the deleted id does not inherit the pointers.
    expect((await post(`${base}/offers`, app.api_key, spring)).status).to.equal(201);
    expect((await get(`${base}/entitlements/api_calls`, app.api_key)).body.overage.offer_id).to.equal(null);
    expect((await get(`${base}/offers`, app.public_key)).status).to.equal(401);
  });

  describe('a plan an offer sells', () => {
    const selling = (id: string, plan: string) => ({
      id,
      name: id,
      plans: [{ plan, prices: [{ interval: 'month', amount: 5 }] }],
    });
    const newPlan = async (id: string) =>
      expect(
        (await post(`${base}/plans`, app.api_key, { id, name: id, pricingCard: { monthlyPrice: 9 } })).status,
      ).to.equal(201);

    it('cannot be deleted while an active offer sells it (409 naming the offers); archived and draft offers do not stop it', async () => {
      await connect();
      await newPlan('lite');
      expect((await post(`${base}/offers`, app.api_key, selling('lite_launch', 'lite'))).status).to.equal(201);
      expect((await post(`${base}/offers/lite_launch/publish`, app.api_key)).status).to.equal(200);
      const refused = await del(`${base}/plans/lite`, app.api_key);
      expect(refused.status).to.equal(409);
      expect(refused.body.error).to.equal(
        'Plan lite is sold by active offer(s) lite_launch; take the plan out of them or archive them first',
      );
      expect(refused.body.offers).to.deep.equal(['lite_launch']);
      expect((await get(`${base}/plans/lite`, app.api_key)).status, 'nothing was deleted').to.equal(200);
      expect((await post(`${base}/offers/lite_launch/archive`, app.api_key)).status).to.equal(200);
      expect((await post(`${base}/offers`, app.api_key, selling('lite_draft', 'lite'))).status).to.equal(201);
      expect((await del(`${base}/plans/lite`, app.api_key)).status).to.equal(200);
    });

    it('a draft whose plan was deleted is not published: 404 naming the plan, not a 500', async () => {
      await connect();
      await newPlan('gone');
      expect((await post(`${base}/offers`, app.api_key, selling('orphan', 'gone'))).status).to.equal(201);
      expect((await del(`${base}/plans/gone`, app.api_key)).status).to.equal(200);
      const res = await post(`${base}/offers/orphan/publish`, app.api_key);
      expect(res.status, res.text).to.equal(404);
      expect(res.body.error).to.equal('plans.0.plan: plan gone does not exist');
      expect((await get(`${base}/offers/orphan`, app.api_key)).body.status).to.equal('draft');
    });

    it("is held by a checkout waiting for its buyer (its own, or an archived offer's): 409 naming it", async () => {
      // Paid after a delete, such a checkout charged the buyer for a plan that was gone and then failed to apply.
      await connectBilling(app);
      await newPlan('solo');
      const own = await post(`${base}/plans/solo/checkout`, app.public_key, { interval: 'month', account: 'buyer1' });
      expect(own.status, own.text).to.equal(201);
      const refused = await del(`${base}/plans/solo`, app.api_key);
      expect(refused.status, refused.text).to.equal(409);
      expect(refused.body.checkouts).to.deep.equal([own.body.id]);
      // The buyer pays: the purchase applies to the plan, which is still there.
      await testEnv().paypal.approve(own.body.approve_url);
      await eventually(
        async () =>
          (await post(`${base}/checkouts/${own.body.id}/complete`, app.public_key)).body.status === 'completed',
      );
      expect((await get(`${base}/namespaces/buyer1`, app.api_key)).body.plan).to.equal('solo');

      await newPlan('lite');
      expect((await post(`${base}/offers`, app.api_key, selling('lite_sale', 'lite'))).status).to.equal(201);
      expect((await post(`${base}/offers/lite_sale/publish`, app.api_key)).status).to.equal(200);
      const chk = await post(`${base}/offers/lite_sale/checkout`, app.public_key, {
        plan: 'lite',
        interval: 'month',
        account: 'buyer2',
      });
      expect(chk.status, chk.text).to.equal(201);
      expect((await post(`${base}/offers/lite_sale/archive`, app.api_key)).status).to.equal(200);
      const held = await del(`${base}/plans/lite`, app.api_key);
      expect(held.status).to.equal(409);
      expect(held.body.checkouts).to.deep.equal([chk.body.id]);
      // Once the checkout is over (the buyer's subscription expired at PayPal, unpaid), the plan can go.
      await testEnv().paypal.expire(String(testEnv().paypal.subscriptionByApproval(chk.body.approve_url)!.id));
      await eventually(
        async () =>
          (await post(`${base}/checkouts/${chk.body.id}/complete`, app.public_key)).body.status === 'cancelled',
      );
      expect((await del(`${base}/plans/lite`, app.api_key)).status).to.equal(200);
    });

    it('a checkout recorded after its plan was deleted (while the provider was asked) is refused', async () => {
      await connectBilling(app);
      await newPlan('brief');
      const hold = testEnv().paypal.holdNext('POST', '/v1/billing/subscriptions');
      const answer = post(`${base}/plans/brief/checkout`, app.public_key, { interval: 'month', account: 'late' });
      await hold.reached; // the plan is read and priced; the provider is creating the subscription
      try {
        expect((await del(`${base}/plans/brief`, app.api_key)).status).to.equal(200);
      } finally {
        hold.release();
      }
      const res = await answer;
      expect(res.status, res.text).to.equal(409);
      expect(res.body.reason).to.equal('plan_deleted');
      expect((await get(`${base}/checkouts?account=late`, app.api_key)).body.data).to.deep.equal([]);
    });

    it('an add-on sold as an order bump (live offer, open checkout) cannot be deleted', async () => {
      // Its order would be captured, then the purchase fail to apply (the add-on to grant was gone).
      await connectBilling(app);
      const bumpy = { ...selling('bumpy', 'pro'), bumps: [{ id: 'st', name: 'Storage', addon: 'storage', price: 3 }] };
      expect((await post(`${base}/offers`, app.api_key, bumpy)).status).to.equal(201);
      expect((await post(`${base}/offers/bumpy/publish`, app.api_key)).status).to.equal(200);
      const live = await del(`${base}/addons/storage`, app.api_key);
      expect(live.status, live.text).to.equal(409);
      expect(live.body).to.deep.include({ offers: ['bumpy'], checkouts: [] });
      const chk = await post(`${base}/offers/bumpy/checkout`, app.public_key, {
        plan: 'pro',
        interval: 'month',
        account: 'b1',
        bumps: ['st'],
      });
      expect(chk.status, chk.text).to.equal(201);
      expect((await post(`${base}/offers/bumpy/archive`, app.api_key)).status).to.equal(200);
      const open = await del(`${base}/addons/storage`, app.api_key);
      expect(open.status).to.equal(409);
      expect(open.body).to.deep.include({ offers: [], checkouts: [chk.body.id] });
      // Paid: the bump is granted, as bought.
      await testEnv().paypal.approve(chk.body.approve_url);
      await testEnv().paypal.approve(chk.body.bump_approve_url);
      await eventually(
        async () =>
          (await post(`${base}/checkouts/${chk.body.id}/complete`, app.public_key)).body.status === 'completed',
      );
      expect((await get(`${base}/namespaces/b1`, app.api_key)).body.addons).to.include('storage');
    });

    it('publishing and deleting at once: live offer and plan kept, or plan gone and offer a draft', async () => {
      await connect();
      for (let i = 0; i < 8; i++) {
        await newPlan(`race_${i}`);
        expect((await post(`${base}/offers`, app.api_key, selling(`race_${i}`, `race_${i}`))).status).to.equal(201);
        const [pub, gone] = await Promise.all([
          post(`${base}/offers/race_${i}/publish`, app.api_key),
          del(`${base}/plans/race_${i}`, app.api_key),
        ]);
        const offer = (await get(`${base}/offers/race_${i}`, app.api_key)).body;
        const plan = (await get(`${base}/plans/race_${i}`, app.api_key)).status;
        expect(`${pub.status}/${gone.status}`, `${pub.text} ${gone.text}`).to.be.oneOf(['200/409', '404/200']);
        if (pub.status === 200) expect([offer.status, plan]).to.deep.equal(['active', 200]);
        else expect([offer.status, plan]).to.deep.equal(['draft', 404]);
      }
    });
  });
});
