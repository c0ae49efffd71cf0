import { resumePause } from '../src/subscriptions/subscriptions.service.js';
import type { ActivityDeps } from './index.js';

export function subscriptionActivities(deps: ActivityDeps) {
  return {
    /** Once-only: does nothing when this pause was already resumed (or replaced by another). */
    resumePausedSubscription: (input: { appId: string; accountId: string; pause: number }) =>
      resumePause(deps, input.appId, input.accountId, { pause: input.pause, by: 'timer' }),
  };
}
