export { OfferkitElement } from './base.js';
export { OfferkitCancelFlow } from './cancel-flow.js';
export { OfferkitPaywall } from './paywall.js';
export { OfferkitPricingTable } from './pricing-table.js';
export { OfferkitUsageMeter } from './usage-meter.js';
export {
  AccountStore,
  AccountTokenClient,
  PublishableClient,
  accountStore,
  decodeAccountToken,
  limitReachedBody,
  refreshAccount,
  watchingFetch,
} from './client.js';
export type {
  AccountState,
  CancelSession,
  Checkout,
  PlanChange,
  Subscription,
  EffectiveAccess,
  PublicOffer,
  PublicPlan,
  SessionOffer,
} from './client.js';
// The SDK the elements are built on, from the same bundle: a page that loads the elements can use it without
// a second copy (the example page does). Its clients are the SDK's, with writes to an account also updating the
// page's components (client.ts).
export { APIError, LimitReachedError, type LimitReachedBody } from '@offerkit/sdk';
