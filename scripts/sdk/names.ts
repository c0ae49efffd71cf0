// The SDK's method names are the routes' own `sdk` field (`<namespace>.<method>`, also the OpenAPI operationId):
// public API, declared once in the route table. This file holds only what the table does not say.

/** Routes open to app credentials that the SDK leaves out on purpose, with the reason. */
export const SDK_EXCLUDED: Record<string, string> = {
  'POST /apps/:appId/mcp': 'the MCP transport: use an MCP client (the tools wrap the same routes)',
  'GET /apps/:appId/stream': 'an event stream that stays open: `client.local()` and `streamChanges` read it',
};

/** Friendly names for the records most calls return: `Account` is what `accounts.get` answers. */
export const SDK_MODELS: Record<string, string> = {
  Account: 'accounts.get',
  Access: 'access.get',
  Plan: 'plans.get',
  PricingCard: 'plans.getPricingCard',
  Entitlement: 'entitlements.get',
  Addon: 'addons.get',
  Incentive: 'incentives.get',
  UsageCounter: 'usage.get',
  Offer: 'offers.get',
  PublicOffer: 'offers.getPublic',
  Checkout: 'checkouts.get',
  Subscription: 'subscriptions.get',
  CancelFlow: 'cancelFlows.get',
  CancelSession: 'cancelSessions.get',
  WebhookEndpoint: 'webhooks.get',
  App: 'apps.get',
};

/**
 * Answer fields that always name one of a closed set of values: the generator refuses to type one as a plain
 * `string` (make it a `z.enum` or `z.literal` in its zod schema), so the SDK offers the literal union.
 */
export const CLOSED_FIELDS = ['object', 'status', 'interval', 'direction', 'effective', 'policy', 'kind'] as const;
