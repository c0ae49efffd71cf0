// The offer editor's form: the state the fields edit, made from a stored offer, and turned back into the body the
// API takes (blank required numbers left out, so the API names them). Plain functions, no React, so they are
// unit-tested (test/unit/offer-form.test.ts). Relative imports name their `.js` file: the unit tests type-check
// this module under the root tsconfig (NodeNext), and the console's bundler resolution accepts the same spelling.
import type {
  AddonsListResponse,
  EntitlementsListResponse,
  OffersCreateBody,
  OffersGetResponse,
  OffersListResponse,
  PlansListResponse,
} from '@offerkit/sdk';
import { isoFromLocal, localInput, orNull, type Num } from '../../forms.js';

export type Offer = OffersGetResponse;
export type CatalogPlan = PlansListResponse[number];
export type Interval = 'month' | 'year';

export interface OfferCatalog {
  plans: PlansListResponse;
  entitlements: EntitlementsListResponse;
  addons: AddonsListResponse;
  offers: OffersListResponse;
}

export interface PriceForm {
  interval: Interval;
  amount: Num;
  currency: string;
  /** Cycles at the offer price before the regular price; blank: the offer price for as long as subscribed. */
  cycles: Num;
}
export interface PlanForm {
  plan: string;
  prices: PriceForm[];
  /** Entitlement overrides (max blank: unlimited), add-ons, and how many cycles the extras last (blank: always). */
  extras: { entitlements: { id: string; max: Num }[]; addons: string[]; cycles: Num };
}
export interface BumpForm {
  id: string;
  name: string;
  addon: string;
  price: Num;
  currency: string;
}
export interface OfferForm {
  name: string;
  description: string;
  plans: PlanForm[];
  bumps: BumpForm[];
  fallback: string | null;
  starts_at: string;
  expires_at: string;
}

export const numOr = (v: number | null | undefined): Num => (typeof v === 'number' ? v : '');

export function formOf(o: Offer): OfferForm {
  return {
    name: o.name,
    description: o.description ?? '',
    plans: o.plans.map((p) => ({
      plan: p.plan,
      prices: p.prices.map((x) => ({
        interval: x.interval,
        amount: x.amount,
        currency: x.currency,
        cycles: numOr(x.cycles),
      })),
      extras: {
        entitlements: p.extras.entitlements.map((e) => ({ id: e.id, max: numOr(e.max) })),
        addons: p.extras.addons,
        cycles: numOr(p.extras.cycles),
      },
    })),
    bumps: o.bumps.map((b) => ({ ...b })),
    fallback: o.fallback,
    starts_at: localInput(o.starts_at),
    expires_at: localInput(o.expires_at),
  };
}

/**
 * The form as the API takes it. A blank required number is left out, so the API names it (`plans.1.prices.0.amount:
 * is required`) rather than the console guessing a value.
 */
export function bodyOf(f: OfferForm, saved: Offer): Omit<OffersCreateBody, 'id' | 'account_id'> {
  // A time the person left alone keeps its stored value (the input shows minutes only).
  const time = (local: string, stored: string | null) => (local === localInput(stored) ? stored : isoFromLocal(local));
  return {
    name: f.name,
    description: f.description || null,
    plans: f.plans.map((p) => ({
      plan: p.plan,
      prices: p.prices.map((x) => ({
        interval: x.interval,
        ...(x.amount === '' ? {} : { amount: x.amount }),
        currency: x.currency,
        cycles: orNull(x.cycles),
      })) as OffersCreateBody['plans'][number]['prices'],
      extras: {
        entitlements: p.extras.entitlements.map((e) => ({ id: e.id, max: orNull(e.max) })),
        addons: p.extras.addons,
        cycles: orNull(p.extras.cycles),
      },
    })),
    bumps: f.bumps.map((b) => ({
      id: b.id,
      name: b.name,
      addon: b.addon,
      ...(b.price === '' ? {} : { price: b.price }),
      currency: b.currency,
    })) as OffersCreateBody['bumps'],
    fallback: f.fallback,
    starts_at: time(f.starts_at, saved.starts_at),
    expires_at: time(f.expires_at, saved.expires_at),
  };
}

/** The plan's regular prices from its pricing card, as offer prices to start from. */
export function regularPrices(plan: CatalogPlan | undefined, fallbackCurrency: string): PriceForm[] {
  const card = plan?.pricingCard;
  const currency = (card?.currency ?? fallbackCurrency).toUpperCase();
  const prices: PriceForm[] = [];
  if (typeof card?.monthlyPrice === 'number')
    prices.push({ interval: 'month', amount: card.monthlyPrice, currency, cycles: '' });
  if (typeof card?.yearlyPrice === 'number')
    prices.push({ interval: 'year', amount: card.yearlyPrice, currency, cycles: '' });
  return prices.length ? prices : [{ interval: 'month', amount: '', currency, cycles: '' }];
}

/** The regular price for an interval and currency, as the API compares them (none when the card lacks it). */
export function listPrice(plan: CatalogPlan | undefined, interval: Interval, currency: string): number | null {
  const card = plan?.pricingCard;
  if (!card || (card.currency ?? 'USD').toUpperCase() !== currency.toUpperCase()) return null;
  const v = interval === 'month' ? card.monthlyPrice : card.yearlyPrice;
  return typeof v === 'number' ? v : null;
}

export const intervalWord = (i: Interval) => (i === 'month' ? 'monthly' : 'yearly');

/** Whether the form would change the stored offer: its body differs from the one the stored offer maps to. */
export function isDirty(f: OfferForm, saved: Offer): boolean {
  return JSON.stringify(bodyOf(f, saved)) !== JSON.stringify(bodyOf(formOf(saved), saved));
}

/** The offer's currency for new prices and bumps: its first price's, else its first bump's, else USD. */
export const offerCurrency = (f: OfferForm) => f.plans[0]?.prices[0]?.currency ?? f.bumps[0]?.currency ?? 'USD';

/** The unsaved offer as draft-preview takes it: it validates like a create, so it names the offer as shareable (its
 * id) or targeted (its account). */
export function previewBody(f: OfferForm, saved: Offer): OffersCreateBody {
  return {
    ...bodyOf(f, saved),
    ...(saved.kind === 'targeted' ? { account_id: saved.account_id } : { id: saved.id }),
  } as OffersCreateBody;
}

/** A price to add to a plan: monthly in its first currency unless that exists, then yearly; at the list price. */
export function nextPrice(row: PlanForm, plan: CatalogPlan | undefined): PriceForm {
  const used = new Set(row.prices.map((x) => `${x.interval}/${x.currency}`));
  const cur = row.prices[0]?.currency ?? 'USD';
  const interval: Interval = used.has(`month/${cur}`) ? 'year' : 'month';
  return { interval, amount: listPrice(plan, interval, cur) ?? '', currency: cur, cycles: '' };
}

/** A price's name for its fields: the plan and interval, and the currency when the interval has two prices. */
export function priceLabel(row: PlanForm, x: PriceForm): string {
  const twin = row.prices.filter((y) => y.interval === x.interval).length > 1;
  return `${row.plan} ${intervalWord(x.interval)} price${twin ? ` ${x.currency}` : ''}`;
}

/** An order bump for an add-on, with an id no other bump has (`addon`, `addon_2` ...). */
export function newBump(
  bumps: BumpForm[],
  addon: { id: string; name: string },
  price: Num,
  currency: string,
): BumpForm {
  let id = addon.id;
  for (let n = 2; bumps.some((b) => b.id === id); n++) id = `${addon.id}_${n}`;
  // Bumps are paid as one order, so they share the first bump's currency (else the offer's).
  return { id, name: addon.name, addon: addon.id, price, currency: bumps[0]?.currency ?? currency };
}

const PRICE_FIELD_WORDS: Record<string, string> = { interval: 'interval', currency: 'currency', cycles: 'cycles' };
const TOP_FIELD_WORDS: Record<string, string> = {
  name: 'Name',
  description: 'Description',
  fallback: 'Fallback offer',
  starts_at: 'Starts',
  expires_at: 'Ends',
};

/**
 * A field the API names by its path (`plans.0.prices.1.amount`) in the editor's own words: the plan by name, the
 * price by its interval (`Pro, yearly price`), an order bump by its name, so a person reads where the problem is.
 */
export function fieldInWords(path: string, f: OfferForm, catalog: OfferCatalog): string {
  const [head, index, part, subIndex, field] = path.split('.');
  const at = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : null);
  if (head === 'plans' && at(index) !== null) {
    const row = f.plans[at(index)!];
    const plan = catalog.plans.find((p) => p.id === row?.plan)?.name ?? row?.plan ?? `Plan ${at(index)! + 1}`;
    if (part === 'prices' && at(subIndex) !== null) {
      const price = row?.prices[at(subIndex)!];
      const which = price ? `${intervalWord(price.interval)} price` : `price ${at(subIndex)! + 1}`;
      return `${plan}, ${which}${field && PRICE_FIELD_WORDS[field] ? ` (${PRICE_FIELD_WORDS[field]})` : ''}`;
    }
    if (part === 'extras') return `${plan}, offer extras`;
    return plan;
  }
  if (head === 'bumps' && at(index) !== null) {
    const bump = f.bumps[at(index)!];
    return `Order bump ${bump?.name || bump?.id || at(index)! + 1}${part === 'price' ? ' (price)' : ''}`;
  }
  if (head === 'plans') return 'Plans';
  if (head === 'bumps') return 'Order bumps';
  return TOP_FIELD_WORDS[head] ?? path.replace(/\./g, ' › ');
}

/** An API error about a field (`<path>: <problem>`) with the field in words; any other message as it is. */
export function errorInWords(message: string, f: OfferForm, catalog: OfferCatalog): string {
  const m = /^([A-Za-z_][\w]*(?:\.[\w]+)*): (.+)$/s.exec(message);
  return m ? `${fieldInWords(m[1], f, catalog)}: ${m[2]}` : message;
}
