// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { checkoutWorkflowId } from '../../workflows/shared.js';
import { type ICheckout } from './checkouts.entities.js';
import type * as S from './checkouts.schemas.js';

export function presentCheckout(c: ICheckout): z.input<typeof S.checkoutSchema> {
  return {
    object: 'checkout',
    id: c.id,
    status: c.status,
    offer: c.offerId ?? null,
    plan: c.planId,
    interval: c.interval,
    currency: c.currency,
    price: Number(c.price),
    list_price: Number(c.listPrice),
    cycles: c.cycles ?? null,
    extras: c.extras,
    bumps: c.bumps.map((b) => ({ id: b.id, name: b.name, price: b.price, currency: b.currency })),
    account: c.accountId ?? null,
    email: c.email ?? null,
    ref: c.ref ?? null,
    approve_url: c.approveUrl ?? null,
    bump_approve_url: c.bumpApproveUrl ?? null,
    created_at: iso(c.createdAt)!,
    completed_at: iso(c.completedAt),
    cancel_reason: c.cancelReason ?? null,
    workflow_id: checkoutWorkflowId(c.id),
    refund: c.refund ?? null,
    source: c.source ?? 'checkout',
    open_url: c.openUrl ?? null,
    opened_at: iso(c.openedAt),
  };
}
