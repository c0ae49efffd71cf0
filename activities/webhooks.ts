import { attemptDelivery } from '../src/webhooks/deliveries.service.js';
import type { ActivityDeps } from './index.js';

export function webhookActivities(deps: ActivityDeps) {
  return {
    /** One signed attempt; idempotent per (delivery, attempt): it sets, not adds, the attempt number. */
    attemptWebhookDelivery: (input: {
      deliveryId: string;
      attempt: number;
      final: boolean;
      nextDelayMs: number | null;
    }) => attemptDelivery(deps, input),
  };
}
