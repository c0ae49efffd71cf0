import { resumePause } from '../src/subscriptions/subscriptions.service.js';
import { checkPlanChange, expirePlanChange } from '../src/subscriptions/plan-changes.service.js';
import type { PlanChangeInput } from '../workflows/shared.js';
import type { ActivityDeps } from './index.js';

export function subscriptionActivities(deps: ActivityDeps) {
  return {
    /** Once-only: does nothing when this pause was already resumed (or replaced by another). */
    resumePausedSubscription: (input: { appId: string; accountId: string; pause: number }) =>
      resumePause(deps, input.appId, input.accountId, { pause: input.pause, by: 'timer' }),
    /** Reads the provider; applies an approved plan change (and the save it carries) once. */
    checkPlanChange: (input: PlanChangeInput) => checkPlanChange(deps, input),
    /** Drops a change not approved in time (applied instead if the provider reports it approved). */
    expirePlanChange: (input: PlanChangeInput) => expirePlanChange(deps, input),
  };
}
