// The PayPal stand-in's orders and payments API: one-time orders (create, read, patch, capture) and refunds of a
// captured payment (an order's or a subscription cycle's), with how PayPal shows an order and its capture.
import { body, id, now, paypalError, type Json, type StandInArea, type StandInParts } from './paypal-standin-core.js';

/** An order as PayPal shows it: without the stand-in's own fields, with its approval link while it waits for one. */
export function presentOrder(baseUrl: string, o: Json) {
  const { clientId: _c, application_context: _a, ...rest } = o;
  const links =
    o.status === 'CREATED' ? [{ rel: 'approve', href: `${baseUrl}/checkoutnow?token=${o.id}`, method: 'GET' }] : [];
  return {
    ...rest,
    links: [...links, { rel: 'self', href: `${baseUrl}/v2/checkout/orders/${o.id}`, method: 'GET' }],
  };
}

/** An order's capture as PayPal shows it (in the order's `purchase_units[0].payments.captures`, a notification). */
export function presentCapture(baseUrl: string, c: Json) {
  return {
    id: c.id,
    status: c.status,
    amount: c.amount,
    final_capture: true,
    custom_id: c.custom_id,
    supplementary_data: { related_ids: { order_id: c.order } },
    create_time: c.time,
    links: [
      { href: `${baseUrl}/v2/payments/captures/${c.id}`, rel: 'self', method: 'GET' },
      { href: `${baseUrl}/v2/payments/captures/${c.id}/refund`, rel: 'refund', method: 'POST' },
      { href: `${baseUrl}/v2/checkout/orders/${c.order}`, rel: 'up', method: 'GET' },
    ],
  };
}

/**
 * Refunds a capture (all of what is left without `amount`) and sends PAYMENT.CAPTURE.REFUNDED with the refund as its
 * resource, its `up` link naming the capture, as PayPal's notification carries it.
 */
export function refundCapture(
  { core, notify }: Pick<StandInParts, 'core' | 'notify'>,
  c: Json,
  amount: Json | null,
  note: string | null,
) {
  const refunded0 = c.refunds.reduce((sum: number, r: Json) => sum + Number(r.amount.value), 0);
  const value = amount ?? {
    currency_code: c.amount.currency_code,
    value: (Number(c.amount.value) - refunded0).toFixed(2),
  };
  const refund = {
    id: id('REF', 14),
    status: 'COMPLETED',
    amount: value,
    note_to_payer: note,
    ...(c.custom_id ? { custom_id: c.custom_id } : {}),
    create_time: now(),
    links: [
      { href: `${core.baseUrl}/v2/payments/refunds/PENDING`, rel: 'self', method: 'GET' },
      { href: `${core.baseUrl}/v2/payments/captures/${c.id}`, rel: 'up', method: 'GET' },
    ],
  };
  refund.links[0].href = `${core.baseUrl}/v2/payments/refunds/${refund.id}`;
  c.refunds.push(refund);
  const refunded = c.refunds.reduce((sum: number, r: Json) => sum + Number(r.amount.value), 0);
  c.status = refunded >= Number(c.amount.value) ? 'REFUNDED' : 'PARTIALLY_REFUNDED';
  core.save();
  core.later(0, () => void notify(c.clientId, 'PAYMENT.CAPTURE.REFUNDED', refund));
  return refund;
}

/** Orders (create, read, patch, capture) and refunds of captured payments, an order's or a subscription's. */
export function orderRoutes(area: StandInArea) {
  const { router, core, auth, notify } = area;
  router.post('/v2/checkout/orders', auth, (ctx) => {
    const b = body(ctx);
    const unit = b.purchase_units?.[0];
    if (!unit?.amount?.value || !/^[A-Z]{3}$/.test(unit.amount.currency_code ?? ''))
      return paypalError(
        ctx,
        422,
        'UNPROCESSABLE_ENTITY',
        'The requested action could not be performed.',
        'INVALID_PARAMETER_VALUE',
      );
    const o = {
      id: id('', 17),
      intent: b.intent ?? 'CAPTURE',
      status: 'CREATED',
      purchase_units: b.purchase_units,
      create_time: now(),
      application_context: b.application_context ?? {},
      clientId: ctx.state.clientId,
    };
    core.state.orders[o.id] = o;
    ctx.status = 201;
    ctx.body = presentOrder(core.baseUrl, o);
  });
  router.get('/v2/checkout/orders/:id', auth, (ctx) => {
    const o = core.own(ctx, core.state.orders, ctx.params.id);
    if (o) ctx.body = presentOrder(core.baseUrl, o);
  });
  // JSON Patch of the amount or description of an order not yet captured; 204 as PayPal answers.
  router.patch('/v2/checkout/orders/:id', auth, (ctx) => {
    const o = core.own(ctx, core.state.orders, ctx.params.id);
    if (!o) return;
    const invalid = (issue: string) =>
      paypalError(ctx, 422, 'UNPROCESSABLE_ENTITY', 'The requested action could not be performed.', issue);
    if (o.status !== 'CREATED' && o.status !== 'APPROVED') return invalid('ORDER_ALREADY_COMPLETED');
    const ops = body(ctx) as unknown;
    if (!Array.isArray(ops) || ops.length === 0) return invalid('PATCH_VALUE_REQUIRED');
    const unit = o.purchase_units?.[0];
    for (const op of ops as { op?: string; path?: string; value?: Json }[]) {
      const m = /^\/purchase_units\/@reference_id=='default'\/(amount|description)$/.exec(op.path ?? '');
      if (op.op !== 'replace' || !m || !unit) return invalid('PATCH_PATH_REQUIRED');
      if (m[1] === 'amount' && (!op.value?.value || !/^[A-Z]{3}$/.test(op.value?.currency_code ?? '')))
        return invalid('INVALID_PARAMETER_VALUE');
      unit[m[1]] = op.value;
    }
    ctx.status = 204;
  });
  router.post('/v2/checkout/orders/:id/capture', auth, (ctx) => {
    const o = core.own(ctx, core.state.orders, ctx.params.id);
    if (!o) return;
    if (o.status === 'COMPLETED')
      return paypalError(
        ctx,
        422,
        'UNPROCESSABLE_ENTITY',
        'The requested action could not be performed.',
        'ORDER_ALREADY_CAPTURED',
      );
    if (o.status !== 'APPROVED')
      return paypalError(
        ctx,
        422,
        'UNPROCESSABLE_ENTITY',
        'The requested action could not be performed.',
        'ORDER_NOT_APPROVED',
      );
    // The payment: a capture PayPal keeps (refundable by its id), shown in the order and in the notification.
    const unit = o.purchase_units?.[0] ?? {};
    const capture = {
      id: id('CAP', 14),
      order: o.id,
      status: 'COMPLETED',
      amount: unit.amount,
      custom_id: unit.custom_id,
      time: now(),
      refunds: [] as Json[],
      clientId: o.clientId,
    };
    core.state.captures[capture.id] = capture;
    const shown = presentCapture(core.baseUrl, capture);
    unit.payments = { captures: [shown] };
    o.status = 'COMPLETED';
    core.save();
    ctx.status = 201;
    ctx.body = presentOrder(core.baseUrl, o);
    core.later(0, () => void notify(o.clientId, 'PAYMENT.CAPTURE.COMPLETED', shown));
  });
  // Refund a captured payment: the whole of it without `amount` (PayPal's default); a capture refunded in full
  // answers 422 CAPTURE_FULLY_REFUNDED. `PayPal-Request-Id` makes a retry answer the first refund (see `auth`).
  router.post('/v2/payments/captures/:id/refund', auth, (ctx) => {
    const c = core.own(ctx, core.state.captures, ctx.params.id);
    if (!c) return;
    // A declined attempt captured nothing: PayPal knows no capture by that id.
    if (c.status === 'DECLINED')
      return paypalError(
        ctx,
        404,
        'RESOURCE_NOT_FOUND',
        'The specified resource does not exist.',
        'INVALID_RESOURCE_ID',
      );
    if (c.status === 'REFUNDED')
      return paypalError(
        ctx,
        422,
        'UNPROCESSABLE_ENTITY',
        'The requested action could not be performed, semantically incorrect, or failed business validation.',
        'CAPTURE_FULLY_REFUNDED',
      );
    const b = body(ctx);
    const refund = refundCapture(area, c, (b.amount as Json | undefined) ?? null, b.note_to_payer ?? null);
    ctx.status = 201;
    ctx.body = { id: refund.id, status: refund.status, links: refund.links };
  });
}
