export { OfferkitElement } from './base.js';
export { OfferkitCancelFlow } from './cancel-flow.js';
export { OfferkitPaywall } from './paywall.js';
export { OfferkitPricingTable } from './pricing-table.js';
export { OfferkitUsageMeter } from './usage-meter.js';
export { ApiError, createClient, decodeAccountToken } from './client.js';
export type * from './client.js';
