import { checkCheckout, expireCheckout } from '../src/checkouts/checkouts.service.js';
import type { CheckoutWorkflowInput } from '../workflows/shared.js';
import type { ActivityDeps } from './index.js';

export function checkoutActivities(deps: ActivityDeps) {
  return {
    /** Reads the provider; applies the purchase once when active (guarded by the checkout's status). */
    checkCheckoutWithProvider: (input: CheckoutWorkflowInput) => checkCheckout(deps, input),
    expireCheckoutNow: (checkoutId: string) => expireCheckout(deps, checkoutId),
  };
}
