import { attemptDelivery } from '../src/webhooks/deliveries.service.js';
import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function webhookActivities(deps: Deps): Pick<Activities, 'attemptWebhookDelivery'> {
  return {
    /** One signed attempt; idempotent per (delivery, attempt): it sets, not adds, the attempt number. */
    attemptWebhookDelivery: (input) => attemptDelivery(deps, input),
  };
}
