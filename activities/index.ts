import type { Deps } from '../src/deps.js';
import type { Activities } from '../workflows/contracts/activities.js';
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

/**
 * Every activity the worker registers, as the contract (workflows/contracts/activities.ts) declares it: each file
 * implements its part, and a missing activity fails to compile here. Each one calls src/ services, with the same
 * dependencies as the API.
 */
export function createActivities(deps: Deps): Activities {
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
