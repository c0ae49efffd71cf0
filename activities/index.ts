import type { Deps } from '../src/deps.js';
import { accountActivities } from './accounts.js';
import { accountActorActivities } from './account.js';
import { analyticsActivities } from './analytics.js';
import { checkoutActivities } from './checkouts.js';
import { diagnosticsActivities } from './diagnostics.js';
import { reservationActivities } from './reservations.js';
import { reconcilerActivities } from './reconciler.js';
import { retentionActivities } from './retention.js';
import { subscriptionActivities } from './subscriptions.js';
import { webhookActivities } from './webhooks.js';

/** What activities get: the same dependencies as the API, so they call the same services. */
export type ActivityDeps = Deps;

/** Every activity the worker registers; each one calls src/ services. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...diagnosticsActivities(deps),
    ...accountActivities(deps),
    ...accountActorActivities(deps),
    ...webhookActivities(deps),
    ...retentionActivities(deps),
    ...checkoutActivities(deps),
    ...subscriptionActivities(deps),
    ...reservationActivities(deps),
    ...analyticsActivities(deps),
    ...reconcilerActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
