import { z } from 'zod';
import { accountParams } from '../accounts/accounts.schemas.js';
import { forbidden } from '../http/errors.js';
import { callerId } from '../http/schemas.js';
import { ctxOf, route, type Scope } from '../http/route.js';
import { changeUsage, readAllUsage, readUsage } from './usage.service.js';

const tags = ['Usage'];
const counterParams = accountParams.extend({ entitlementId: callerId });
const counter = z.object({ entitlement: z.string(), count: z.number() });
const amountBody = z.object({ amount: z.number().int().min(-1e12).max(1e12) });

const change = async (s: Scope<z.output<typeof counterParams>, unknown, unknown>, amount: number) => {
  const r = await changeUsage(ctxOf(s), s.params.accountId, s.params.entitlementId, amount, {
    origin: s.origin,
    idempotency: s.idempotency,
  });
  return { entitlement: r.entitlement, count: r.count };
};

const blocked =
  '402 with the limit_reached body when the entitlement blocks overage and the call would pass the limit; the ' +
  'counter does not move.';

export const usageRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/usage',
    auth: ['S', 'P'],
    tags,
    summary: 'All counters of the account',
    description: '`{ <entitlement_id>: count }` for every usage entitlement the account has.',
    params: accountParams,
    response: z.record(z.string(), z.number()),
    handler: (s) => readAllUsage(s.em, s.app!.id, s.params.accountId),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId',
    auth: ['S', 'P'],
    tags,
    summary: 'One counter',
    params: counterParams,
    response: counter,
    handler: (s) => readUsage(s.em, s.app!.id, s.params.accountId, s.params.entitlementId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/add',
    auth: ['S', 'P'],
    tags,
    summary: 'Add 1',
    idempotency: 'atomic',
    description: blocked,
    errors: [402],
    params: counterParams,
    response: counter,
    handler: (s) => change(s, 1),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/remove',
    auth: ['S'],
    tags,
    summary: 'Subtract 1 (counters stop at 0)',
    idempotency: 'atomic',
    params: counterParams,
    response: counter,
    handler: (s) => change(s, -1),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/amount',
    auth: ['S', 'P'],
    tags,
    summary: 'Add or subtract an amount',
    idempotency: 'atomic',
    description: `A negative amount subtracts (counters stop at 0); the publishable key may only add (403 otherwise). ${blocked}`,
    params: counterParams,
    body: amountBody,
    errors: [402, 403],
    response: counter,
    handler: (s) => {
      if (s.body.amount < 0 && s.caller.kind === 'publishable')
        throw forbidden('The publishable key cannot subtract usage');
      return change(s, s.body.amount);
    },
  }),
];
