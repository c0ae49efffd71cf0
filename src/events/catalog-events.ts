// The catalog event types (plan.*, incentive.*) with their samples.
import { presentIncentive, presentPlan } from '../catalog/catalog.present.js';
import type { IIncentive, IPlan } from '../catalog/catalog.entities.js';
import { account, at, type EventTypeInfo } from './event-samples.js';

const plan = {
  appId: account.appId,
  id: 'pro',
  name: 'Pro',
  description: 'For growing teams',
  note: null,
  isFree: false,
  pricingCard: { plan_id: 'pro', title: 'Pro', monthlyPrice: 29, yearlyPrice: 290, currency: 'USD' },
  meta: { highlight: true },
  privateMetaKeys: [],
  createdAt: at,
  updatedAt: at,
} as unknown as IPlan;
const samplePlan = (over: Partial<IPlan> = {}) =>
  presentPlan(
    { ...plan, ...over } as IPlan,
    [
      { id: 'api_calls', max: 10000 },
      { id: 'sso', max: null },
    ],
    ['priority'],
  );
const incentive = {
  appId: account.appId,
  id: 'partner_deal',
  name: 'Partner deal',
  description: 'Double limits for partners',
  createdAt: at,
  updatedAt: at,
} as unknown as IIncentive;
const sampleIncentive = () => presentIncentive(incentive, [{ id: 'api_calls', max: 20000 }], ['priority']);

export const CATALOG_EVENT_TYPES: EventTypeInfo[] = [
  { type: 'plan.created', description: 'A plan was added.', sample: () => ({ object: samplePlan() }) },
  {
    type: 'plan.updated',
    description: "A plan's details, limits, add-ons, meta or pricing changed.",
    sample: () => ({ object: samplePlan(), previous: { description: 'For teams' } }),
  },
  { type: 'plan.deleted', description: 'A plan was deleted.', sample: () => ({ object: samplePlan() }) },
  { type: 'incentive.created', description: 'An incentive was added.', sample: () => ({ object: sampleIncentive() }) },
  {
    type: 'incentive.updated',
    description: "An incentive's details, overrides or add-ons changed.",
    sample: () => ({ object: sampleIncentive(), previous: { name: 'Partner' } }),
  },
  {
    type: 'incentive.deleted',
    description: 'An incentive was deleted.',
    sample: () => ({ object: sampleIncentive() }),
  },
];
