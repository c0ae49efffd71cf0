import { checkCheckout, expireCheckout } from '../src/checkouts/checkouts.service.js';
import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function checkoutActivities(deps: Deps): Pick<Activities, 'checkCheckoutWithProvider' | 'expireCheckoutNow'> {
  return {
    /** Reads the provider; applies the purchase once when active (guarded by the checkout's status). */
    checkCheckoutWithProvider: (input) => checkCheckout(deps, input),
    expireCheckoutNow: (checkoutId) => expireCheckout(deps, checkoutId),
  };
}
