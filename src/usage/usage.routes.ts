import { z } from 'zod';
import { accountParams } from '../accounts/accounts.schemas.js';
import { appIdParams } from '../apps/apps.schemas.js';
import { forbidden } from '../errors.js';
import { accountId, callerId, FUTURE_SKEW_MINUTES, HISTORY_YEARS, historyTimestamp } from '../http/schemas.js';
import { ctxOf, route, type Scope } from '../http/route.js';
import {
  finishReservation,
  getReservation,
  listReservations,
  RESERVATION_LIST_LIMIT,
  RESERVATION_DEFAULT_TTL_S,
  RESERVATION_MAX_TTL_S,
  reserveUsage,
} from './reservations.service.js';
import { INGEST_MAX_EVENTS, ingestUsage } from './ingest.service.js';
import { changeUsage, readAllUsage, readUsage } from './usage.service.js';
import { quoteUpgradeLink, upgradeLink } from './upgrade.js';

const tags = ['Usage'];
const counterParams = accountParams.extend({
  entitlementId: callerId.describe('The usage entitlement counted, e.g. `api_calls`.'),
});
const counter = z.object({ entitlement: z.string(), count: z.number() });
const entityCounter = counter.extend({
  entity: z.string().optional().describe('The entity whose counter this is (a per-entity entitlement).'),
});
const entityField = accountId.describe(
  'The entity (registered under the account: `POST .../entities`) whose usage counter a per-entity feature ' +
    '(`per: "entity"`) moves, and whose balance a feature drawing from a per-entity pool draws from, e.g. `u_42`. ' +
    'Required for such a feature (409 `entity_required` without it, 404 when not registered); any other ' +
    'entitlement takes none (409 `entity_not_taken`).',
);
const amountBody = z.object({
  amount: z
    .number()
    .int()
    .min(-1e12)
    .max(1e12)
    .describe('How much to add, e.g. 5; a negative amount subtracts (the counter stops at 0).'),
  entity: entityField.optional(),
});
const entityQuery = z.object({ entity: entityField.optional() });

const change = async (
  s: Scope<z.output<typeof counterParams>, unknown, unknown>,
  amount: number,
  entity: string | undefined,
) => {
  const r = await changeUsage(ctxOf(s), s.params.accountId, s.params.entitlementId, amount, {
    origin: s.origin,
    idempotency: s.idempotency,
    requestId: s.requestId,
    entity,
  });
  return { entitlement: r.entitlement, count: r.count };
};

const reservationParams = accountParams.extend({ reservationId: z.string().min(1).max(255) });
const reservation = z.object({
  id: z.string(),
  account: z.string(),
  entitlement: z.string(),
  amount: z.number(),
  status: z.enum(['held', 'committed', 'released', 'expired']),
  committed: z.number().nullable(),
  expires_at: z.string(),
  created_at: z.string(),
  settled_at: z.string().nullable(),
  /** The workflow that releases the hold at `expires_at` (`reservation-expiry/<app>/<id>`). */
  workflow_id: z.string().nullable(),
});
const reserveBody = z.object({
  amount: z.number().int().min(1).max(1e12),
  expires_in: z.number().int().min(1).max(RESERVATION_MAX_TTL_S).default(RESERVATION_DEFAULT_TTL_S),
  entity: entityField.optional(),
});
const commitBody = z.object({ amount: z.number().int().min(0).max(1e12) });

const ingestEvent = z.object({
  id: z.string().min(1).max(255),
  account: z.string().min(1).max(255),
  entitlement: z.string().min(1).max(255),
  amount: z.number().int().min(-1e12).max(1e12),
  // Any offset JavaScript reads (PostgreSQL refuses some, such as +20:30), passed on in UTC, within the history
  // window (docs/api.md, "Batch ingest").
  timestamp: historyTimestamp
    .transform((d) => d.toISOString())
    .optional()
    .describe(
      `When the usage happened, e.g. \`2026-11-01T12:00:00Z\`: at most ${HISTORY_YEARS} years back and ` +
        `${FUTURE_SKEW_MINUTES} minutes ahead of the service's clock (else a 400). Omitted: now.`,
    ),
  entity: accountId
    .optional()
    .describe(
      'The entity under the account, e.g. `u_42`: required for a per-entity feature or one drawing from a ' +
        'per-entity pool, refused for any other (the event is an `error`, as is one naming an entity not ' +
        'registered under the account).',
    ),
});
const ingestBody = z.object({ events: z.array(ingestEvent).min(1).max(INGEST_MAX_EVENTS) });
const ingestResult = z.object({
  id: z.string(),
  status: z.enum(['applied', 'blocked', 'error']),
  count: z.number().nullable(),
  error: z.string().nullable(),
  duplicate: z.boolean(),
});

const upgradeLinkBody = z.object({
  plan: callerId.describe('The plan to buy, e.g. `pro`.'),
  interval: z
    .enum(['month', 'year'])
    .optional()
    .describe('Billing interval. Omitted: monthly if priced so, else yearly.'),
  offer: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe("An offer's id to buy the plan at the offer's price, e.g. `spring_sale`. Omitted: the regular price."),
});
const upgradeLinkSchema = z.object({
  account: z.string(),
  plan: z.object({ id: z.string(), name: z.string() }),
  offer: z.string().nullable(),
  interval: z.enum(['month', 'year']),
  currency: z.string(),
  price: z.number(),
  kind: z.enum(['pricing_page', 'provider_approval']),
  url: z.string(),
  checkout: z.string().nullable(),
});

const blocked =
  '402 with the limit_reached body when the entitlement blocks overage and the call would pass the limit; the ' +
  'counter does not move. A per-entity feature (`per: "entity"`) names the `entity` whose counter moves, against ' +
  "the plan's limit for each entity, and a feature drawing from a per-entity pool the `entity` whose balance pays " +
  '(409 `entity_required` without it, 409 `entity_not_taken` for a feature kept per account that draws from no ' +
  'per-entity pool, 404 for an entity not registered under the account); ' +
  'the entitlement that counts entities (the seats) is moved only by registering and deleting entities (400).';

export const usageRoutes = [
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/upgrade-link',
    sdk: 'accounts.upgradeLink',
    auth: ['S'],
    mcp: {
      tool: 'create_upgrade_link',
      about:
        "The app's checkout page when it has one, else the provider's approval page; reused for an hour. Nothing " +
        'is charged until the provider confirms. 409 with `reason` when there is no price or no provider.',
      use: 'Use it when a person wants to upgrade or hit a limit: hand them `url`. Returns it with the price.',
      level: 'W',
      spends: async (ctx, params, body) => {
        const q = await quoteUpgradeLink(ctx, params.accountId, body as z.output<typeof upgradeLinkBody>);
        return {
          amount: q.price,
          currency: q.currency,
          description:
            `Would make a checkout link for account ${params.accountId} to buy plan ${q.plan.id}` +
            `${q.offerId ? ` at offer ${q.offerId}` : ''} for ${q.price} ${q.currency} per ${q.interval}: the ` +
            "app's checkout page with the selection, or a new approval page at the payment provider (not asked in a " +
            'dry run). Nothing is charged until the person approves and the provider confirms.',
        };
      },
    },
    tags: ['Accounts'],
    summary: 'Make a checkout link for an account to buy a plan',
    description:
      'Use it when a person wants to upgrade (or hit a limit) and needs a page to pay on: hand them `url`. It is the ' +
      "app's checkout page with the selection (`kind: pricing_page`) when the app has one, else the payment " +
      "provider's approval page (`kind: provider_approval`), reused for the same account and selection within an " +
      'hour. Nothing is charged until the person approves and the provider confirms. 409 with `reason` when the plan ' +
      'or offer has no price at that interval or the provider is not connected.',
    params: accountParams,
    body: upgradeLinkBody,
    errors: [409, 502],
    response: upgradeLinkSchema,
    handler: (s) => upgradeLink(ctxOf(s), s.params.accountId, s.body, s.origin),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/usage',
    sdk: 'usage.list',
    auth: ['S', 'P'],
    mcp: {
      tool: 'get_account_usage',
      about: '',
      use: 'Returns `{ <entitlement_id>: count }` for every usage entitlement the account has.',
      level: 'R',
    },
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
    sdk: 'usage.get',
    auth: ['S', 'P'],
    mcp: { tool: 'get_usage_count', use: 'Returns `{ entitlement, count }`.', level: 'R' },
    tags,
    summary: 'One counter',
    description:
      'A per-entity entitlement (`per: "entity"`) answers the named `entity`\'s counter: 409 `entity_required` ' +
      'without one, 409 `entity_not_taken` with one for a per-account entitlement, 404 for an entity not ' +
      'registered under the account.',
    params: counterParams,
    query: entityQuery,
    response: entityCounter,
    errors: [409],
    handler: (s) => readUsage(s.em, s.app!.id, s.params.accountId, s.params.entitlementId, s.query.entity ?? ''),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/add',
    sdk: 'usage.add',
    auth: ['S', 'P'],
    mcp: {
      tool: 'increment_usage',
      use:
        'Use it to record one use of a metered feature. Returns `{ entitlement, count }`; a 402 carries the ' +
        "offer's checkout_url to hand the person.",
      level: 'W',
      about: '402 when the limit blocks the call; the counter does not move.',
      records: (params) => ({ entitlementId: params.entitlementId, amount: 1 }),
    },
    tags,
    summary: 'Add 1',
    idempotency: 'atomic',
    description: blocked,
    errors: [402],
    params: counterParams,
    query: entityQuery,
    response: counter,
    handler: (s) => change(s, 1, s.query.entity),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/remove',
    sdk: 'usage.remove',
    auth: ['S'],
    mcp: {
      tool: 'decrement_usage',
      use: 'Use it to undo one recorded use. Returns `{ entitlement, count }`.',
      level: 'W',
    },
    tags,
    summary: 'Subtract 1 (counters stop at 0)',
    idempotency: 'atomic',
    description:
      'On a feature drawing from a pool, gives back its cost as a refund grant (to the `entity` named, on a ' +
      'per-entity pool: 409 `entity_required` without it, 404 when not registered).',
    params: counterParams,
    query: entityQuery,
    response: counter,
    handler: (s) => change(s, -1, s.query.entity),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/amount',
    sdk: 'usage.addAmount',
    auth: ['S', 'P'],
    mcp: {
      tool: 'add_usage_amount',
      about: 'A negative amount subtracts (counters stop at 0). 402 as for increment_usage.',
      use: 'Use it to record (or correct) several uses at once. Returns `{ entitlement, count }` or the 402.',
      level: 'W',
      records: (params, body) => ({
        entitlementId: params.entitlementId,
        amount: (body as z.output<typeof amountBody>).amount,
      }),
    },
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
      return change(s, s.body.amount, s.body.entity);
    },
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/reservations',
    sdk: 'reservations.create',
    auth: ['S', 'P'],
    tags,
    summary: 'Reserve an amount',
    description:
      'Checks the limit and holds `amount` in one atomic step: held amounts count against the limit, `left` and ' +
      '`can` until the reservation is committed, released or expires (`expires_in` seconds, default ' +
      `${RESERVATION_DEFAULT_TTL_S}, at most ${RESERVATION_MAX_TTL_S}). ` +
      `${blocked.replace('the counter does not move', 'nothing is held')} ` +
      'A feature that draws from a credits pool also holds `amount * cost` of the pool (not drawable by others until ' +
      'the reservation settles); 402 `credits_exhausted` when the balance less what other reservations hold cannot ' +
      'cover it (nothing is held). A feature drawing from a per-entity pool holds (and its commit debits) the ' +
      "named `entity`'s balance: 409 `entity_required` without one, 404 for one not registered under the account " +
      '(and 409 `entity_not_taken` for an entity on any other feature).',
    params: counterParams,
    body: reserveBody,
    status: 201,
    errors: [402],
    response: reservation,
    handler: (s) =>
      reserveUsage(ctxOf(s), s.params.accountId, s.params.entitlementId, s.body.amount, s.body.expires_in, {
        origin: s.origin,
        entity: s.body.entity,
      }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/reservations',
    sdk: 'reservations.list',
    auth: ['S'],
    tags,
    summary: "An account's reservations, newest first",
    description:
      `At most ${RESERVATION_LIST_LIMIT}: the held ones and the latest settled, each with the workflow that releases ` +
      'it at `expires_at`. 404 for an unknown account.',
    params: accountParams,
    query: z.object({ status: reservation.shape.status.optional() }),
    response: z.array(reservation),
    handler: (s) => listReservations(ctxOf(s), s.params.accountId, s.query.status),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/reservations/:reservationId',
    sdk: 'reservations.get',
    auth: ['S', 'P'],
    tags,
    summary: 'A reservation',
    params: reservationParams,
    response: reservation,
    handler: (s) => getReservation(ctxOf(s), s.params.accountId, s.params.reservationId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/reservations/:reservationId/commit',
    sdk: 'reservations.commit',
    auth: ['S', 'P'],
    tags,
    summary: 'Commit a reservation',
    description:
      'Adds `amount` (at most the reserved amount; 0 is allowed) to the counter and frees the hold. 409 when the ' +
      'amount is more than the reservation holds, or the reservation was already committed, released or expired. ' +
      'A reservation of a feature that draws from a credits pool debits `amount * cost` (the cost it was reserved ' +
      'at) and frees the credits it held; 402 `credits_exhausted` (and it stays held) when grants that expired ' +
      'meanwhile took credits it held and the balance no longer covers the commit.',
    params: reservationParams,
    body: commitBody,
    errors: [402, 409],
    response: reservation,
    handler: (s) =>
      finishReservation(ctxOf(s), s.params.accountId, s.params.reservationId, 'committed', s.body.amount, {
        requestId: s.requestId,
      }),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/reservations/:reservationId/release',
    sdk: 'reservations.release',
    auth: ['S', 'P'],
    tags,
    summary: 'Release a reservation',
    description:
      'Frees the hold (and the credits a drawing feature held) without adding usage. 409 when it was already ' +
      'committed, released or expired.',
    params: reservationParams,
    errors: [409],
    response: reservation,
    handler: (s) => finishReservation(ctxOf(s), s.params.accountId, s.params.reservationId, 'released', 0),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/usage/events',
    sdk: 'usage.ingest',
    auth: ['S'],
    tags,
    summary: 'Ingest a batch of usage events',
    description:
      `Up to ${INGEST_MAX_EVENTS} events \`{ id, account, entitlement, amount, timestamp?, entity? }\`, applied in ` +
      'order with the ' +
      'same rules as `.../amount` (blocking limits, counters stopping at 0, threshold events), in one database round ' +
      'trip. A feature that draws from a credits pool debits `amount * cost` in the same call (a negative amount ' +
      'refunds, as `.../amount` does). The answer has one result per event, in order: `applied` (with the new ' +
      '`count`), `blocked` (a blocking limit, or a pool whose balance cannot cover the event: `error` says which; ' +
      'nothing changed) or `error` (unknown account or entitlement, a boolean entitlement or a pool, the entitlement ' +
      'that counts entities, an `entity` missing for a per-entity feature or pool, given to any other, or not ' +
      'registered under the account). A per-entity feature (`per: "entity"`) moves the named entity\'s counter ' +
      "against the plan's limit, and a per-entity pool the entity's balance. Event ids " +
      'deduplicate for 30 days: a re-sent event changes nothing and answers its first result with `duplicate: true`. ' +
      '`timestamp` dates the history row (analytics); it defaults to now.',
    params: appIdParams,
    body: ingestBody,
    bodyLimit: '2mb',
    response: z.object({ results: z.array(ingestResult) }),
    handler: async (s) => ({ results: await ingestUsage(ctxOf(s), s.body.events) }),
  }),
];
