import { Account, AccountAddon, AccountExtra } from './accounts/accounts.entities.js';
import { Report } from './analytics/analytics.entities.js';
import { CancelFlow, CancelSession } from './cancel-flows/cancel-flows.entities.js';
import { App } from './apps/apps.entities.js';
import {
  Addon,
  Entitlement,
  Incentive,
  IncentiveAddon,
  IncentiveEntitlement,
  Plan,
  PlanAddon,
  PlanEntitlement,
} from './catalog/catalog.entities.js';
import { Event } from './events/events.entities.js';
import { Checkout } from './checkouts/checkouts.entities.js';
import { Offer } from './offers/offers.entities.js';
import { Org } from './orgs/orgs.entities.js';
import { Subscription } from './subscriptions/subscriptions.entities.js';
import { PaymentConnection } from './payments/payments.entities.js';
import { OutboxEntry } from './temporal/outbox.entities.js';
import { ReconcilerRepair } from './housekeeping/reconciler.entities.js';
import { UsageCounter, UsageEvent } from './usage/usage.entities.js';
import { AccountEntity, CreditBalance, CreditGrant, CreditLedgerEntry } from './credits/credits.entities.js';
import { WebhookDelivery, WebhookEndpoint } from './webhooks/webhooks.entities.js';
import { McpCall, McpConnection, McpSettings } from './mcp/mcp.entities.js';
import { OAuthClient, OAuthCode, OAuthRequest, OAuthToken } from './oauth/oauth.entities.js';
import { AgentThread } from './agent/agent.entities.js';
import { TimelineEntry } from './timeline/timeline.entities.js';

/** Every entity, registered explicitly (no folder discovery). */
export const entities = [
  App,
  OutboxEntry,
  ReconcilerRepair,
  Plan,
  Entitlement,
  Addon,
  Incentive,
  PlanEntitlement,
  PlanAddon,
  IncentiveEntitlement,
  IncentiveAddon,
  Account,
  AccountAddon,
  AccountExtra,
  UsageCounter,
  UsageEvent,
  CreditBalance,
  CreditGrant,
  CreditLedgerEntry,
  AccountEntity,
  Event,
  Org,
  Report,
  WebhookEndpoint,
  WebhookDelivery,
  PaymentConnection,
  Offer,
  Checkout,
  Subscription,
  TimelineEntry,
  CancelFlow,
  CancelSession,
  McpSettings,
  McpConnection,
  McpCall,
  OAuthClient,
  OAuthRequest,
  OAuthCode,
  OAuthToken,
  AgentThread,
];
