// The credit event types (credits.*: granted, low, depleted, expired) with their samples.
import { account, type EventTypeInfo } from './event-samples.js';

/** The data of `credits.low` and `credits.depleted`, as the usage statement writes it (src/usage/usage.service.ts). */
const creditsLevel = (previous: number, balance: number) => ({
  object: {
    account_id: account.id,
    entity: null,
    pool: 'credits',
    pool_name: 'AI credits',
    balance,
    previous_balance: previous,
    granted_per_period: 2000,
    feature: 'premium_messages',
  },
});

export const CREDIT_EVENT_TYPES: EventTypeInfo[] = [
  {
    type: 'credits.granted',
    description:
      'Credits were granted to an account: by its plan for a period, by the API, a top-up pack or a rollover.',
    sample: () => ({
      object: {
        account_id: account.id,
        entity: null,
        pool: 'credits',
        grant: {
          id: 'grt_3kTqP0xYb9',
          pool: 'credits',
          amount: 2000,
          remaining: 2000,
          expires_at: '2026-12-28T09:00:00.000Z',
          source: 'plan',
          reason: null,
          created_at: '2026-11-28T09:00:00.000Z',
        },
        balance: 2150,
      },
    }),
  },
  {
    type: 'credits.low',
    description: "An account's credits fell under 10% of what its plan grants per period.",
    sample: () => creditsLevel(180, 150),
  },
  {
    type: 'credits.depleted',
    description: "An account's credits reached 0: features that draw from the pool answer 402 until it has more.",
    sample: () => creditsLevel(10, 0),
  },
  {
    type: 'credits.expired',
    description: "Unused credits of a grant expired at the grant's date (the account's clock).",
    sample: () => ({
      object: {
        account_id: account.id,
        entity: null,
        pool: 'credits',
        grant: 'grt_3kTqP0xYb9',
        expired: 420,
        balance: 0,
      },
    }),
  },
];
