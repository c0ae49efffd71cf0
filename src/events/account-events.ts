// The account and usage event types (account.*, usage.*) with their samples, and the data object of the usage
// limit events, which the usage statement builds in SQL alike.
import { account, sampleAccount, type EventTypeInfo } from './event-samples.js';

/**
 * The data object of `usage.limit_warning` and `usage.limit_reached`. The usage statement builds the
 * same object in SQL when a threshold is crossed (see usage.service.ts); a test checks they agree.
 */
export function usageEventObject(u: {
  accountId: string;
  entitlementId: string;
  entitlementName: string;
  usage: number;
  max: number;
  /** The entity whose counter crossed the threshold (a per-entity entitlement); null for the account's own. */
  entity?: string | null;
}) {
  return {
    account_id: u.accountId,
    entitlement_id: u.entitlementId,
    entitlement_name: u.entitlementName,
    entity: u.entity ?? null,
    usage: u.usage,
    max: u.max,
    left: Math.max(0, u.max - u.usage),
    percent: Math.floor((u.usage * 100) / u.max),
  };
}

const usage = (used: number) => ({
  object: usageEventObject({
    accountId: account.id,
    entitlementId: 'api_calls',
    entitlementName: 'API calls',
    usage: used,
    max: 10000,
  }),
});

export const ACCOUNT_EVENT_TYPES: EventTypeInfo[] = [
  {
    type: 'account.created',
    description: 'An account was created through the API, or by a checkout from a buyer without one.',
    sample: () => ({ object: sampleAccount() }),
  },
  {
    type: 'account.updated',
    description: 'Any change to an account; `previous` has the old values of the changed fields.',
    sample: () => ({ object: sampleAccount({ name: 'Ada King' }), previous: { name: 'Ada Lovelace' } }),
  },
  { type: 'account.deleted', description: 'An account was deleted.', sample: () => ({ object: sampleAccount() }) },
  {
    type: 'account.plan_changed',
    description: 'An account moved to a different plan.',
    sample: () => ({ object: sampleAccount(), previous: { plan: 'free' } }),
  },
  {
    type: 'account.incentive_applied',
    description: 'An incentive was applied to an account or replaced its previous one.',
    sample: () => ({ object: sampleAccount({ incentiveId: 'partner_deal' }), previous: { incentive: null } }),
  },
  {
    type: 'account.incentive_removed',
    description: 'An incentive was removed (by the API or at its expiry).',
    sample: () => ({ object: sampleAccount(), previous: { incentive: 'partner_deal' } }),
  },
  {
    type: 'account.addon_granted',
    description: 'An account got an add-on of its own, for example from an order bump.',
    sample: () => ({ object: sampleAccount(), addon_id: 'priority', source: 'api' }),
  },
  { type: 'usage.limit_warning', description: 'An account crossed 80% of a usage limit.', sample: () => usage(8000) },
  {
    type: 'usage.limit_reached',
    description: 'An account used up a limit; its `can` is now false.',
    sample: () => usage(10000),
  },
];
