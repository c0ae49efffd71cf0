// Every workflow type the worker runs.
export { pingWorkflow } from './diagnostics.js';
export { incentiveExpiryWorkflow } from './incentive-expiry.js';
export { webhookDeliveryWorkflow } from './webhook-delivery.js';
export { retentionWorkflow } from './retention.js';
export { checkoutWorkflow } from './checkout.js';
export { pauseWorkflow } from './pause.js';
export { planChangeWorkflow } from './plan-change.js';
export { reservationExpiryWorkflow } from './reservation-expiry.js';
export { usageRollupAppWorkflow, usageRollupWorkflow } from './usage-rollup.js';
export { reconcileWorkflow } from './reconcile.js';
export { accountWorkflow } from './account.js';
