// The offer editor's form mapping (console/src/pages/OfferEditor/form.ts): a stored offer to the form and back to
// the body the API takes, the prices and bumps the editor adds, pure and without a browser.
import { expect } from 'chai';
import {
  bodyOf,
  errorInWords,
  formOf,
  isDirty,
  listPrice,
  newBump,
  nextPrice,
  offerCurrency,
  previewBody,
  priceLabel,
  regularPrices,
  type CatalogPlan,
  type Offer,
  type OfferCatalog,
  type PlanForm,
} from '../../console/src/pages/OfferEditor/form.js';

const STARTS = '2030-01-15T09:30:00.000Z';
const offer = (extra: Partial<Offer> = {}) =>
  ({
    id: 'spring',
    kind: 'shareable',
    account_id: null,
    name: 'Spring sale',
    description: null,
    status: 'draft',
    live_status: 'draft',
    plans: [
      {
        plan: 'pro',
        prices: [
          { interval: 'month', amount: 8, currency: 'USD', cycles: 3 },
          { interval: 'year', amount: 80, currency: 'USD', cycles: null },
        ],
        extras: {
          entitlements: [
            { id: 'seats', max: 10 },
            { id: 'sso', max: null },
          ],
          addons: ['boost'],
          cycles: null,
        },
      },
    ],
    bumps: [{ id: 'boost', name: 'Boost', addon: 'boost', price: 5, currency: 'USD' }],
    fallback: null,
    starts_at: STARTS,
    expires_at: null,
    ...extra,
  }) as unknown as Offer;

const card = (pricingCard: Record<string, unknown> | undefined) =>
  ({ id: 'pro', pricingCard }) as unknown as CatalogPlan;

describe('offer editor form: a stored offer to the form and back', () => {
  it('shows nulls as blank fields and times as local inputs', () => {
    const form = formOf(offer());
    expect(form.description).to.equal('');
    expect(form.plans[0].prices[1].cycles).to.equal('');
    expect(form.plans[0].extras.entitlements).to.deep.equal([
      { id: 'seats', max: 10 },
      { id: 'sso', max: '' },
    ]);
    expect(form.plans[0].extras.cycles).to.equal('');
    expect(form.starts_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
    expect(form.expires_at).to.equal('');
  });

  it('gives back the stored offer’s fields unchanged, so an untouched offer is not dirty', () => {
    const o = offer();
    const form = formOf(o);
    expect(bodyOf(form, o)).to.deep.equal({
      name: o.name,
      description: null,
      plans: o.plans,
      bumps: o.bumps,
      fallback: null,
      // The input shows minutes only: a time left alone keeps its stored value, seconds and all.
      starts_at: STARTS,
      expires_at: null,
    });
    expect(isDirty(form, o)).to.be.false;
    expect(
      isDirty(
        formOf(offer({ starts_at: '2030-01-15T09:30:42.123Z' })),
        offer({ starts_at: '2030-01-15T09:30:42.123Z' }),
      ),
    ).to.be.false;
  });

  it('is dirty after a change; a changed time is sent as UTC, a cleared one as null', () => {
    const o = offer();
    const form = formOf(o);
    expect(isDirty({ ...form, name: 'Summer sale' }, o)).to.be.true;
    const later = bodyOf({ ...form, expires_at: '2030-02-01T12:00' }, o);
    expect(later.expires_at).to.equal(new Date('2030-02-01T12:00').toISOString());
    expect(bodyOf({ ...form, starts_at: '' }, o).starts_at).to.equal(null);
  });

  it('leaves a blank price or bump price out, so the API names the field; blank cycles and limits are null', () => {
    const o = offer();
    const form = formOf(o);
    const plan = form.plans[0];
    const blank: PlanForm = {
      ...plan,
      prices: [{ ...plan.prices[0], amount: '', cycles: '' }],
      extras: { ...plan.extras, entitlements: [{ id: 'seats', max: '' }], cycles: '' },
    };
    const body = bodyOf({ ...form, plans: [blank], bumps: [{ ...form.bumps[0], price: '' }] }, o);
    expect(body.plans[0].prices).to.deep.equal([{ interval: 'month', currency: 'USD', cycles: null }]);
    expect(body.plans[0].extras).to.deep.equal({
      entitlements: [{ id: 'seats', max: null }],
      addons: ['boost'],
      cycles: null,
    });
    expect(body.bumps).to.deep.equal([{ id: 'boost', name: 'Boost', addon: 'boost', currency: 'USD' }]);
  });

  it('names a shareable offer by its id and a targeted one by its account in the draft preview', () => {
    expect(previewBody(formOf(offer()), offer()))
      .to.include({ id: 'spring' })
      .and.not.have.property('account_id');
    const targeted = offer({ kind: 'targeted', account_id: 'acme' } as Partial<Offer>);
    expect(previewBody(formOf(targeted), targeted))
      .to.include({ account_id: 'acme' })
      .and.not.have.property('id');
  });
});

describe('offer editor form: prices and bumps the editor adds', () => {
  it('starts a plan at its regular prices, in the card’s currency upper-cased', () => {
    expect(regularPrices(card({ currency: 'eur', monthlyPrice: 10, yearlyPrice: 100 }), 'USD')).to.deep.equal([
      { interval: 'month', amount: 10, currency: 'EUR', cycles: '' },
      { interval: 'year', amount: 100, currency: 'EUR', cycles: '' },
    ]);
    // No card: one blank monthly price in the offer's currency, for the person to fill in.
    expect(regularPrices(card(undefined), 'gbp')).to.deep.equal([
      { interval: 'month', amount: '', currency: 'GBP', cycles: '' },
    ]);
  });

  it('finds the list price for an interval only in the card’s currency', () => {
    const pro = card({ monthlyPrice: 10, yearlyPrice: 100 });
    expect(listPrice(pro, 'year', 'usd')).to.equal(100);
    expect(listPrice(pro, 'month', 'EUR')).to.equal(null);
    expect(listPrice(card({ monthlyPrice: 10 }), 'year', 'USD')).to.equal(null);
    expect(listPrice(undefined, 'month', 'USD')).to.equal(null);
  });

  it('adds a monthly price, then a yearly one, at the list price', () => {
    const pro = card({ monthlyPrice: 10, yearlyPrice: 100 });
    const row: PlanForm = { plan: 'pro', prices: [], extras: { entitlements: [], addons: [], cycles: '' } };
    const first = nextPrice(row, pro);
    expect(first).to.deep.equal({ interval: 'month', amount: 10, currency: 'USD', cycles: '' });
    expect(nextPrice({ ...row, prices: [first] }, pro)).to.deep.equal({
      interval: 'year',
      amount: 100,
      currency: 'USD',
      cycles: '',
    });
    expect(nextPrice({ ...row, prices: [{ ...first, currency: 'EUR' }] }, pro)).to.include({
      interval: 'year',
      amount: '',
    });
  });

  it('names a price by plan and interval, and by currency when the interval has two', () => {
    const row = formOf(offer()).plans[0];
    expect(priceLabel(row, row.prices[0])).to.equal('pro monthly price');
    const eur = { ...row.prices[0], currency: 'EUR' };
    expect(priceLabel({ ...row, prices: [...row.prices, eur] }, eur)).to.equal('pro monthly price EUR');
  });

  it('gives a new bump an id no other bump has and the first bump’s currency', () => {
    const boost = { id: 'boost', name: 'Boost' };
    expect(newBump([], boost, 5, 'EUR')).to.deep.equal({
      id: 'boost',
      name: 'Boost',
      addon: 'boost',
      price: 5,
      currency: 'EUR',
    });
    const bumps = formOf(offer()).bumps;
    expect(newBump(bumps, boost, 7, 'EUR')).to.include({ id: 'boost_2', currency: 'USD', price: 7 });
    expect(newBump([...bumps, newBump(bumps, boost, 7, 'EUR')], boost, 9, 'EUR').id).to.equal('boost_3');
  });

  it('takes the offer’s currency from its first price, else its first bump, else USD', () => {
    const form = formOf(offer());
    expect(offerCurrency(form)).to.equal('USD');
    expect(offerCurrency({ ...form, plans: [], bumps: [{ ...form.bumps[0], currency: 'EUR' }] })).to.equal('EUR');
    expect(offerCurrency({ ...form, plans: [], bumps: [] })).to.equal('USD');
  });

  it("words the API's field paths as the editor names them (the preview's refusal, item 7)", () => {
    const form = formOf(offer());
    const catalog = {
      plans: [{ id: 'pro', name: 'Pro' }],
      entitlements: [],
      addons: [],
      offers: [],
    } as unknown as OfferCatalog;
    expect(errorInWords('plans.0.prices.0.amount: is required', form, catalog)).to.equal(
      'Pro, monthly price: is required',
    );
    expect(errorInWords('plans.0.prices.1.currency: must be a three-letter code', form, catalog)).to.equal(
      'Pro, yearly price (currency): must be a three-letter code',
    );
    expect(errorInWords('plans.0.extras.entitlements.0.id: unknown entitlement', form, catalog)).to.equal(
      'Pro, offer extras: unknown entitlement',
    );
    expect(errorInWords('bumps.0.price: must be positive', form, catalog)).to.equal(
      'Order bump Boost (price): must be positive',
    );
    expect(errorInWords('name: must not be empty', form, catalog)).to.equal('Name: must not be empty');
    // A message that names no field stays as the API words it.
    expect(errorInWords('Plan pro has no monthly price', form, catalog)).to.equal('Plan pro has no monthly price');
  });
});
