// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { type IApp } from './apps.entities.js';
import { dunningOf } from './clock.js';
import { type appSchema } from './apps.schemas.js';
import { DEFAULT_PLAN_CHANGE_POLICY } from './apps.schemas.js';

export function presentApp(app: IApp): z.input<typeof appSchema> {
  return {
    id: app.id,
    name: app.name,
    plan: app.plan ?? null,
    api_key: app.apiKey,
    public_key: app.publicKey,
    checkout_url: app.checkoutUrl ?? null,
    plan_change_policy: planChangePolicyOf(app),
    dunning: dunningOf(app),
    publishable_first_used_at: iso(app.publishableFirstUsedAt),
    created_at: iso(app.createdAt)!,
  };
}

/** The app's plan change policy per direction, defaults filled in. */
export const planChangePolicyOf = (app: Pick<IApp, 'planChangePolicy'>) => ({
  ...DEFAULT_PLAN_CHANGE_POLICY,
  ...(app.planChangePolicy ?? {}),
});
