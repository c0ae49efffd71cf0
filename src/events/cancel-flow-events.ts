// The cancel flow event types (cancel_flow.saved, cancel_flow.cancelled) with the session they carry.
import type { ICancelSession } from '../cancel-flows/cancel-flows.entities.js';
import { templateSteps } from '../cancel-flows/engine.js';
import { describeOffer } from '../cancel-flows/save-offers.js';
import { sessionView } from '../cancel-flows/cancel-flows.present.js';
import { account, at, sampleAccount, type EventTypeInfo } from './event-samples.js';

const steps = templateSteps();
const sampleSession = (status: 'saved' | 'cancelled') =>
  sessionView(
    {
      id: 'cxl_4fGh8JkLm2NpQr6sTv9w',
      appId: account.appId,
      flowId: 'default',
      accountId: account.id,
      status,
      flow: { id: 'default', name: 'Default cancel flow', steps },
      stepId: status === 'saved' ? 'offer' : 'confirm',
      path: status === 'saved' ? ['reason'] : ['reason', 'offer'],
      answers: { reason: { answer: 'too_expensive', text: null } },
      offer:
        status === 'saved'
          ? {
              ...describeOffer('offer', { kind: 'discount', percent: 25, cycles: 3 }, null, {}, 'static'),
              details: { percent: 25, cycles: 3, price: 21.75, regular_price: 29, currency: 'USD', interval: 'month' },
              body: 'Keep Pro for 21.75 USD per month instead of 29 for the next 3 renewals.',
              status: 'accepted',
            }
          : null,
      offers: [],
      approveUrl:
        status === 'saved' ? 'https://www.paypal.com/webapps/billing/subscriptions/update?ba_token=BA-0000' : null,
      result:
        status === 'saved'
          ? {
              outcome: 'discount',
              status: 'pending_approval',
              plan: 'pro',
              price: 21.75,
              currency: 'USD',
              interval: 'month',
              percent: 25,
              cycles: 3,
            }
          : { outcome: 'cancelled', billing: 'provider', plan: 'free' },
      revenueKept: null,
      currency: null,
      claimedUntil: null,
      claimedBy: null,
      endedAt: at,
      createdAt: at,
      updatedAt: at,
    } as ICancelSession,
    {
      id: account.id,
      plan_name: status === 'saved' ? 'Pro' : 'Free',
      subscription:
        status === 'saved'
          ? { price: 29, currency: 'USD', interval: 'month', renews_at: '2026-02-15T10:30:00.000Z' }
          : null,
    },
  );

export const CANCEL_FLOW_EVENT_TYPES: EventTypeInfo[] = [
  {
    type: 'cancel_flow.saved',
    description: 'A customer accepted a save offer in a cancel flow.',
    sample: () => ({ object: sampleSession('saved'), account: sampleAccount() }),
  },
  {
    type: 'cancel_flow.cancelled',
    description: 'A customer finished a cancel flow and cancelled; provider subscriptions are already cancelled.',
    sample: () => ({ object: sampleSession('cancelled'), account: sampleAccount({ planId: 'free' }) }),
  },
];
