// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { type IOffer } from './offers.entities.js';
import type * as S from './offers.schemas.js';

export function presentOffer(o: IOffer, redeemed = 0): z.input<typeof S.offerSchema> {
  return {
    id: o.id,
    kind: o.kind,
    account_id: o.accountId ?? null,
    name: o.name,
    description: o.description ?? null,
    status: o.status,
    live_status: liveStatus(o),
    plans: o.plans,
    bumps: o.bumps,
    starts_at: iso(o.startsAt),
    expires_at: iso(o.expiresAt),
    fallback: o.fallbackOfferId ?? null,
    redemptions: redeemed,
    views: o.views,
    published: o.provider.productId !== null,
    published_at: iso(o.publishedAt),
    archived_at: iso(o.archivedAt),
    created_at: iso(o.createdAt)!,
    updated_at: iso(o.updatedAt)!,
  };
}

export type LiveStatus = 'draft' | 'scheduled' | 'active' | 'expired' | 'archived';

export function liveStatus(o: Pick<IOffer, 'status' | 'startsAt' | 'expiresAt'>, now = new Date()): LiveStatus {
  if (o.status !== 'active') return o.status;
  if (o.startsAt && o.startsAt > now) return 'scheduled';
  if (o.expiresAt && o.expiresAt <= now) return 'expired';
  return 'active';
}
