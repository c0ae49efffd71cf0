import type { PricingCard } from '../catalog/catalog.entities.js';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';

export interface UpgradeOffer {
  id: string | null;
  name: string;
  plan: { id: string; name: string };
  interval: 'month' | 'year';
  currency: string;
  price: number;
  list_price: number;
  cycles: number | null;
  new_limit: number | null;
  checkout_url: string | null;
  expires_at: string | null;
}

export interface LimitReachedBody {
  error: 'limit_reached';
  message: string;
  entitlement: { id: string; name: string; usage: number; max: number };
  offer: UpgradeOffer | null;
  retry_after_purchase: boolean;
}

function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount);
  } catch {
    return `${amount} ${currency}`;
  }
}

/** The app's pricing page with the selection in the query string, when the app has one. */
export function checkoutLink(base: string | null | undefined, q: { offer?: string | null; plan: string; interval: string; account: string }): string | null {
  if (!base) return null;
  const url = new URL(base);
  if (q.offer) url.searchParams.set('offer', q.offer);
  url.searchParams.set('plan', q.plan);
  url.searchParams.set('interval', q.interval);
  url.searchParams.set('account', q.account);
  return url.toString();
}

/**
 * The 402 body: the cheapest plan with a pricing card that raises this limit, at its regular price
 * (monthly when the card has a monthly price, else yearly), compared per month.
 */
export async function upgradeFor(
  ctx: Ctx,
  a: { accountId: string; entitlementId: string; entitlementName: string; usage: number; max: number },
): Promise<LimitReachedBody> {
  const rows = await sql<{ id: string; name: string; pricing_card: PricingCard; max: string | null; seq: string }>(
    ctx.em,
    `select p.id, p.name, p.pricing_card, pe.max, p.seq
       from plans p
       join plan_entitlements pe on pe.app_id = p.app_id and pe.plan_id = p.id and pe.entitlement_id = $2
      where p.app_id = $1 and p.pricing_card is not null and (pe.max is null or pe.max > $3)
        and p.id <> coalesce((select plan_id from accounts where app_id = $1 and id = $4), '')`,
    [ctx.app.id, a.entitlementId, a.max, a.accountId],
  );
  const priced = rows
    .map((r) => {
      const card = r.pricing_card;
      const interval: 'month' | 'year' | null = typeof card.monthlyPrice === 'number' ? 'month' : typeof card.yearlyPrice === 'number' ? 'year' : null;
      if (!interval) return null;
      const price = (interval === 'month' ? card.monthlyPrice : card.yearlyPrice)!;
      return { r, card, interval, price, perMonth: interval === 'month' ? price : price / 12 };
    })
    .filter((x) => x !== null)
    .sort((x, y) => x.perMonth - y.perMonth || Number(x.r.seq) - Number(y.r.seq));
  const best = priced[0];
  const entitlement = { id: a.entitlementId, name: a.entitlementName, usage: a.usage, max: a.max };
  const used = `${a.entitlementName}: ${a.usage} of ${a.max} used.`;
  if (!best) return { error: 'limit_reached', message: `${used} No plan with a higher limit is available.`, entitlement, offer: null, retry_after_purchase: false };

  const currency = (best.card.currency ?? 'USD').toUpperCase();
  const newLimit = best.r.max === null ? null : Number(best.r.max);
  const checkoutUrl = checkoutLink(ctx.app.checkoutUrl, { plan: best.r.id, interval: best.interval, account: a.accountId });
  const offer: UpgradeOffer = {
    id: null,
    name: best.card.title ?? best.r.name,
    plan: { id: best.r.id, name: best.r.name },
    interval: best.interval,
    currency,
    price: best.price,
    list_price: best.price,
    cycles: null,
    new_limit: newLimit,
    checkout_url: checkoutUrl,
    expires_at: null,
  };
  const message =
    `${used} Upgrade to ${best.r.name} (${money(best.price, currency)}/${best.interval}) for ` +
    `${newLimit === null ? 'unlimited' : newLimit} ${a.entitlementName}${checkoutUrl ? `: ${checkoutUrl}` : '.'}`;
  return { error: 'limit_reached', message, entitlement, offer, retry_after_purchase: true };
}
