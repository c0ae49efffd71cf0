// The catalog's routes, per resource (plans, entitlements, add-ons, incentives), in the table's order.
import { addonRoutes } from './addons.routes.js';
import { entitlementRoutes } from './entitlements.routes.js';
import { incentiveRoutes } from './incentives.routes.js';
import { planRoutes } from './plans.routes.js';

export const catalogRoutes = [...planRoutes, ...entitlementRoutes, ...addonRoutes, ...incentiveRoutes];
