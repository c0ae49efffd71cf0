// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { accountWorkflowId } from '../../workflows/shared.js';
import { type IAccount } from './accounts.entities.js';
import { presentSubscription } from '../subscriptions/subscriptions.present.js';
import type * as S from './accounts.schemas.js';

export function presentAccount(a: IAccount): z.input<typeof S.accountSchema> {
  return {
    id: a.id,
    app_id: a.appId,
    name: a.name ?? null,
    plan: a.planId,
    incentive: a.incentiveId ?? null,
    incentive_expires_at: iso(a.incentiveExpiresAt),
    incentive_workflow_id: a.incentiveId && a.incentiveExpiresAt ? accountWorkflowId(a.appId, a.id) : null,
    offer: a.offerId ?? null,
    created_at: iso(a.createdAt)!,
    updated_at: iso(a.updatedAt)!,
  };
}

export function presentAccountDetail(
  a: IAccount,
  addons: string[],
  subscription: ReturnType<typeof presentSubscription> | null,
): z.input<typeof S.accountDetailSchema> {
  return { ...presentAccount(a), addons, subscription };
}
