import { accountRoutes } from './accounts/accounts.routes.js';
import { analyticsRoutes } from './analytics/analytics.routes.js';
import { appRoutes } from './apps/apps.routes.js';
import { cancelFlowRoutes } from './cancel-flows/cancel-flows.routes.js';
import { consoleRoutes } from './console-api/console.routes.js';
import { catalogRoutes } from './catalog/catalog.routes.js';
import { checkoutRoutes } from './checkouts/checkouts.routes.js';
import { docsRoutes } from './docs/docs.routes.js';
import { elementsRoutes } from './elements/elements.routes.js';
import { importRoutes } from './import/import.routes.js';
import { offerRoutes } from './offers/offers.routes.js';
import { orgRoutes } from './orgs/orgs.routes.js';
import { notificationRoutes } from './payments/notifications.js';
import { paymentRoutes } from './payments/payments.routes.js';
import { healthRoutes } from './health/health.routes.js';
import { streamRoutes } from './stream/stream.routes.js';
import { subscriptionRoutes } from './subscriptions/subscriptions.routes.js';
import { timelineRoutes } from './timeline/timeline.routes.js';
import { testClockRoutes } from './apps/test-clock.routes.js';
import { usageRoutes } from './usage/usage.routes.js';
import { creditRoutes } from './credits/credits.routes.js';
import { packRoutes } from './credits/packs.routes.js';
import { entityRoutes } from './credits/entities.routes.js';
import { webhookRoutes } from './webhooks/webhooks.routes.js';
import { agentRoutes } from './agent/agent.routes.js';
import { mcpRoutes } from './mcp/mcp.routes.js';
import { oauthRoutes } from './oauth/oauth.routes.js';
import type { RouteDef } from './http/route.js';

/** The route table: every HTTP route of the service. The router, /openapi.json and MCP tools derive from it. */
export const routes: RouteDef[] = [
  ...healthRoutes,
  ...docsRoutes,
  ...elementsRoutes,
  ...appRoutes,
  ...catalogRoutes,
  ...accountRoutes,
  ...usageRoutes,
  ...streamRoutes,
  ...creditRoutes,
  ...packRoutes,
  ...entityRoutes,
  ...analyticsRoutes,
  ...importRoutes,
  ...orgRoutes,
  ...webhookRoutes,
  ...paymentRoutes,
  ...offerRoutes,
  ...checkoutRoutes,
  ...notificationRoutes,
  ...subscriptionRoutes,
  ...timelineRoutes,
  ...testClockRoutes,
  ...cancelFlowRoutes,
  ...mcpRoutes,
  ...oauthRoutes,
  ...agentRoutes,
  ...consoleRoutes,
];
