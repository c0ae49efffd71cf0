// Save offers of a cancel flow: which offers apply to an account, the static choice by answers,
// and the offer as a session shows it (terms, details and copy).
import type { EntityManager } from '@mikro-orm/postgresql';
import { Account, type IAccount } from '../accounts/accounts.entities.js';
import { Incentive, Plan, type IIncentive, type IPlan } from '../catalog/catalog.entities.js';
import { notFound } from '../errors.js';
import { regularPrice } from '../offers/offers.service.js';
import { PaymentConnection } from '../payments/payments.entities.js';
import { Subscription, type ISubscription } from '../subscriptions/subscriptions.entities.js';
import type { GivenAnswer, OfferTerms, SessionOffer } from './cancel-flows.entities.js';
import type { z } from 'zod';
import type { OfferKind, sessionOfferSchema, StaticOffer, Step } from './cancel-flows.schemas.js';

// An offer's terms and a session's offer are stored with the session: declared with it, handed on from here.
export type { OfferTerms, SessionOffer };

export interface OfferCopy {
  headline?: string;
  body?: string;
  cta?: string;
}

export function presentOffer(o: SessionOffer | null): z.input<typeof sessionOfferSchema> | null {
  if (!o) return null;
  return {
    kind: o.kind,
    source: o.source,
    details: o.details,
    headline: o.headline,
    body: o.body,
    cta: o.cta,
    status: o.status,
    ...(o.fallback_reason ? { fallback_reason: o.fallback_reason } : {}),
  };
}

/** What deciding and describing an offer needs to know about the account and the app. */
export interface OfferContext {
  account: IAccount;
  plan: IPlan | undefined;
  subscription: ISubscription | null;
  providerConnected: boolean;
  plans: Map<string, IPlan>;
  incentives: Map<string, IIncentive>;
}

export async function loadOfferContext(em: EntityManager, appId: string, accountId: string): Promise<OfferContext> {
  const account = await em.findOne(Account, { appId, id: accountId });
  if (!account) throw notFound(`Account ${accountId}`);
  const [subscription, connection, plans, incentives] = await Promise.all([
    em.findOne(Subscription, { appId, accountId }),
    em.count(PaymentConnection, { appId }),
    em.find(Plan, { appId }),
    em.find(Incentive, { appId }),
  ]);
  const planMap = new Map(plans.map((p) => [p.id, p]));
  return {
    account,
    plan:
      planMap.get(subscription?.status === 'active' ? subscription.planId : account.planId) ??
      planMap.get(account.planId),
    subscription,
    providerConnected: connection > 0,
    plans: planMap,
    incentives: new Map(incentives.map((i) => [i.id, i])),
  };
}

export const round2 = (n: number) => Math.round(n * 100) / 100;
/** The price after a discount of `percent`, to the cent. */
export const discountedPrice = (regular: number, percent: number) => round2((regular * (100 - percent)) / 100);
const billable = (c: OfferContext): ISubscription | null =>
  c.subscription?.status === 'active' && !c.subscription.cancelAt && c.providerConnected ? c.subscription : null;
/**
 * No change waits for approval or is scheduled for the renewal: a price or plan offer would meet it (the account
 * actor refuses such an accept with a 409, workflows/billing-rules.ts), so it is not offered.
 */
const changeFree = (sub: ISubscription) => !sub.pendingChange && !sub.scheduledChange;
/** What the subscription costs without a discount in force (a cancel-flow discount lowers `price` for a while). */
export const regularPriceOf = (sub: ISubscription) => Number(sub.discount?.regularPrice ?? sub.price);
/** A discount in force, or one waiting for the buyer's approval: no second discount on top of it. */
const discounted = (sub: ISubscription) => !!sub.discount || !!sub.pendingChange?.discount;
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The downgrade price: the target plan's regular price in the subscription's terms, if cheaper. */
function downgradePrice(c: OfferContext, planId: string): number | null {
  const sub = billable(c);
  const plan = c.plans.get(planId);
  if (!sub || !changeFree(sub) || !plan || plan.id === sub.planId) return null;
  const price = regularPrice(plan, sub.interval, sub.currency);
  return price !== null && price < Number(sub.price) ? price : null;
}

/**
 * Whether these terms can be applied to the account now: discounts, downgrades and pauses act on an
 * active subscription through the connected provider; an incentive needs one the account lacks.
 */
export function applies(t: OfferTerms, c: OfferContext): boolean {
  switch (t.kind) {
    case 'discount': {
      const sub = billable(c);
      return !!sub && changeFree(sub) && !discounted(sub) && regularPriceOf(sub) > 0;
    }
    case 'downgrade':
      return downgradePrice(c, t.plan) !== null;
    case 'pause': {
      const sub = billable(c);
      return sub !== null && !sub.pendingChange;
    }
    case 'incentive':
      return c.incentives.has(t.incentive) && c.account.incentiveId !== t.incentive;
  }
}

/** Whether any offer of this kind could apply (for the model's list of allowed kinds). */
export function kindApplies(
  kind: OfferKind,
  c: OfferContext,
  allowed: { downgrade_plans: string[]; incentives: string[] },
): boolean {
  if (kind === 'discount') return applies({ kind, percent: 1, cycles: 1 }, c);
  if (kind === 'pause') return applies({ kind, months: 1 }, c);
  if (kind === 'downgrade') return allowed.downgrade_plans.some((plan) => applies({ kind, plan }, c));
  return allowed.incentives.some((incentive) => applies({ kind, incentive, months: 1 }, c));
}

export function termsOf(o: StaticOffer): OfferTerms {
  switch (o.kind) {
    case 'discount':
      return { kind: o.kind, percent: o.percent, cycles: o.cycles };
    case 'downgrade':
      return { kind: o.kind, plan: o.plan };
    case 'pause':
      return { kind: o.kind, months: o.months };
    case 'incentive':
      return { kind: o.kind, incentive: o.incentive, months: o.months };
  }
}

/** Every answer id given so far (optionally at one step). */
function givenAnswers(answers: Record<string, GivenAnswer>, step?: string): string[] {
  const entries = step ? [answers[step]].filter(Boolean) : Object.values(answers);
  return entries.map((a) => a!.answer).filter((a): a is string => !!a);
}

/** The flow's static offer for these answers: the first whose `when` matches and that applies. */
export function chooseStatic(
  step: Step,
  answers: Record<string, GivenAnswer>,
  c: OfferContext | null,
): StaticOffer | null {
  for (const o of step.offers ?? []) {
    if (o.when && !givenAnswers(answers, o.when.step).some((a) => o.when!.answers.includes(a))) continue;
    if (c && !applies(termsOf(o), c)) continue;
    return o;
  }
  return null;
}

/** The offer as the session shows it: numbers worked out for this account, and default copy. */
export function describeOffer(
  step: string,
  t: OfferTerms,
  c: OfferContext | null,
  copy: OfferCopy,
  source: 'static' | 'dynamic',
): SessionOffer {
  const sub = c ? billable(c) : null;
  const planName = c?.plan?.name ?? 'your plan';
  let details: Record<string, unknown>;
  let d: Required<OfferCopy>;
  switch (t.kind) {
    case 'discount': {
      const regular = sub ? regularPriceOf(sub) : null;
      const price = regular === null ? null : discountedPrice(regular, t.percent);
      details = {
        percent: t.percent,
        cycles: t.cycles,
        price,
        regular_price: regular,
        currency: sub?.currency ?? null,
        interval: sub?.interval ?? null,
      };
      d = {
        headline: `Stay and save ${t.percent}%`,
        body: sub
          ? `Keep ${planName} for ${price} ${sub.currency} per ${sub.interval} instead of ${regular} ` +
            `for the next ${plural(t.cycles, 'renewal')}.`
          : `Keep ${planName} at ${t.percent}% off for the next ${plural(t.cycles, 'renewal')}.`,
        cta: `Accept ${t.percent}% off`,
      };
      break;
    }
    case 'downgrade': {
      const target = c?.plans.get(t.plan);
      const name = target?.name ?? t.plan;
      const price = c ? downgradePrice(c, t.plan) : null;
      details = {
        plan: { id: t.plan, name },
        price,
        regular_price: sub ? Number(sub.price) : null,
        currency: sub?.currency ?? null,
        interval: sub?.interval ?? null,
      };
      d = {
        headline: `Switch to ${name} instead`,
        body:
          sub && price !== null
            ? `Move to ${name} for ${price} ${sub.currency} per ${sub.interval} instead of ${Number(sub.price)}.`
            : `Move to ${name}, a smaller plan, instead of leaving.`,
        cta: `Switch to ${name}`,
      };
      break;
    }
    case 'pause':
      details = { months: t.months };
      d = {
        headline: 'Take a break instead',
        body: `Pause billing for ${plural(t.months, 'month')}. Your data stays, and your plan comes back on its own when the pause ends.`,
        cta: `Pause for ${plural(t.months, 'month')}`,
      };
      break;
    case 'incentive': {
      const name = c?.incentives.get(t.incentive)?.name ?? t.incentive;
      details = { incentive: { id: t.incentive, name }, months: t.months };
      d = {
        headline: `${name}, on us`,
        body: `Stay and get ${name} for ${plural(t.months, 'month')}, free.`,
        cta: `Claim ${name}`,
      };
      break;
    }
  }
  return {
    step,
    kind: t.kind,
    source,
    terms: t,
    details,
    headline: copy.headline ?? d.headline,
    body: copy.body ?? d.body,
    cta: copy.cta ?? d.cta,
    status: 'shown',
  };
}
