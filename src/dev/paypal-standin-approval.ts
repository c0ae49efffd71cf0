// The PayPal stand-in's approval page: what a buyer sees at PayPal for a subscription, a plan revision or an order,
// and what their decision does (approved subscriptions activate, revisions apply, orders become capturable).
import { activate } from './paypal-billing.js';
import { presentOrder } from './paypal-standin-orders.js';
import { presentSubscription } from './paypal-standin-subscriptions.js';
import {
  body,
  id,
  subNow,
  type Json,
  type StandInArea,
  type StandInParts,
  type StandInCore,
} from './paypal-standin-core.js';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** What an approval link (`ba_token` of a subscription or a revision, `token` of an order) is for, if still open. */
export function findApproval(
  core: StandInCore,
  token: string,
): { kind: 'subscription' | 'revision' | 'order'; item: Json; plan: Json } | null {
  for (const s of Object.values(core.state.subscriptions)) {
    if (s.approval_token === token && s.status === 'APPROVAL_PENDING')
      return { kind: 'subscription', item: s, plan: core.state.plans[s.plan_id] };
    if (s.pending?.token === token) return { kind: 'revision', item: s, plan: core.state.plans[s.pending.plan_id] };
  }
  const o = core.state.orders[token];
  if (o && o.status === 'CREATED') return { kind: 'order', item: o, plan: {} };
  return null;
}

/** Applies the buyer's decision and returns where the browser goes next. */
export function decide(
  area: StandInParts,
  found: { kind: 'subscription' | 'revision' | 'order'; item: Json },
  approve: boolean,
): string {
  const { core, host, notify } = area;
  const { kind, item } = found;
  const ctxUrls = (kind === 'revision' ? item.pending.application_context : item.application_context) as Json;
  const back = new URL(approve ? ctxUrls.return_url : ctxUrls.cancel_url);
  if (kind === 'subscription') {
    back.searchParams.set('subscription_id', item.id);
    back.searchParams.set('ba_token', item.approval_token);
    if (approve) {
      item.status = 'APPROVED';
      item.status_update_time = subNow(item);
      core.later(core.opts.activationDelayMs ?? 0, () => {
        if (item.status !== 'APPROVED') return;
        // PayPal charges the first cycle when the subscription activates (on the subscription's clock).
        activate(host, item);
        core.save();
        void notify(item.clientId, 'BILLING.SUBSCRIPTION.ACTIVATED', presentSubscription(core.baseUrl, item));
      });
    }
  } else if (kind === 'revision') {
    back.searchParams.set('subscription_id', item.id);
    if (approve) {
      item.plan_id = item.pending.plan_id;
      item.status_update_time = subNow(item);
      void notify(item.clientId, 'BILLING.SUBSCRIPTION.UPDATED', presentSubscription(core.baseUrl, item));
    }
    delete item.pending;
  } else {
    back.searchParams.set('token', item.id);
    if (approve) {
      item.status = 'APPROVED';
      back.searchParams.set('PayerID', id('', 13));
      // PayPal tells the merchant a buyer approved an order (CHECKOUT.ORDER.APPROVED): it can capture it now.
      core.later(0, () => void notify(item.clientId, 'CHECKOUT.ORDER.APPROVED', presentOrder(core.baseUrl, item)));
    }
  }
  core.save();
  return back.toString();
}

/** The approval page: what the buyer sees at PayPal, and the decision it posts. */
export function approvalRoutes(area: StandInArea) {
  const { router, core } = area;
  // The approval page: what the buyer sees at PayPal.
  router.get('/checkoutnow', (ctx) => {
    const found = findApproval(core, String(ctx.query.ba_token ?? ctx.query.token ?? ''));
    ctx.type = 'html';
    if (!found) {
      ctx.status = 404;
      ctx.body = '<!doctype html><title>PayPal (stand-in)</title><p>This approval link is not valid.</p>';
      return;
    }
    const { kind, item, plan } = found;
    const price =
      kind === 'order' ? item.purchase_units[0].amount : plan.billing_cycles.at(-1).pricing_scheme.fixed_price;
    const what =
      kind === 'order'
        ? escape(item.purchase_units[0].description ?? 'One-time purchase')
        : `${escape(plan.name)}, ${price.value} ${price.currency_code} per ` +
          plan.billing_cycles.at(-1).frequency.interval_unit.toLowerCase();
    const token = escape(String(ctx.query.ba_token ?? ctx.query.token));
    ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Approve payment (PayPal stand-in)</title></head>
<body><main><h1>Approve your payment</h1><p id="summary">${what}</p>
<form method="post" action="/checkoutnow/decision"><input type="hidden" name="token" value="${token}">
<button type="submit" name="decision" value="approve" id="approve">Agree &amp; Subscribe</button>
<button type="submit" name="decision" value="cancel" id="cancel">Cancel and return</button></form>
<p><small>Local PayPal stand-in: no money moves.</small></p></main></body></html>`;
  });
  router.post('/checkoutnow/decision', (ctx) => {
    const b = body(ctx);
    const found = findApproval(core, String(b.token ?? ''));
    if (!found) {
      ctx.status = 404;
      ctx.body = 'This approval link is not valid.';
      return;
    }
    ctx.redirect(decide(area, found, b.decision === 'approve'));
    ctx.status = 303;
  });
}
