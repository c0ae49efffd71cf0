// Every event type a webhook endpoint can subscribe to, in the order GET /event-types, the OpenAPI document and the
// SDKs list them: the lists of each domain (account-events.ts, credit-events.ts, catalog-events.ts,
// subscription-events.ts, cancel-flow-events.ts) joined.
import { ACCOUNT_EVENT_TYPES } from './account-events.js';
import { CANCEL_FLOW_EVENT_TYPES } from './cancel-flow-events.js';
import { CATALOG_EVENT_TYPES } from './catalog-events.js';
import { CREDIT_EVENT_TYPES } from './credit-events.js';
import type { EventTypeInfo } from './event-samples.js';
import { SUBSCRIPTION_EVENT_TYPES } from './subscription-events.js';

export const EVENT_TYPES: EventTypeInfo[] = [
  ...ACCOUNT_EVENT_TYPES,
  ...CREDIT_EVENT_TYPES,
  ...CATALOG_EVENT_TYPES,
  ...SUBSCRIPTION_EVENT_TYPES,
  ...CANCEL_FLOW_EVENT_TYPES,
];

export const EVENT_TYPE_NAMES = new Set(EVENT_TYPES.map((e) => e.type));
