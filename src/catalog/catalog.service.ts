// The catalog (plans, entitlements, add-ons, incentives and the links between them), one file per capability;
// the routes and other domains import it through this index.
export * from './catalog.lookups.js';
export * from './plans.service.js';
export * from './entitlements.service.js';
export * from './addons.service.js';
export * from './incentives.service.js';
export * from './links.service.js';
