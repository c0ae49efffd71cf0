// Credits under an account: balances with their grants, grants by the API, the ledger (issue 42).
import { z } from 'zod';
import { accountParams } from '../accounts/accounts.schemas.js';
import { cursorParam } from '../http/pagination.js';
import { accountId, callerId } from '../http/schemas.js';
import { ctxOf, route } from '../http/route.js';
import { grantCredits, readCredits, readLedger } from './credits.service.js';

const tags = ['Credits'];

const grantSchema = z.object({
  id: z.string(),
  pool: z.string(),
  entity: z.string().nullable().describe("The entity whose balance it is (a per-entity pool); null: the account's"),
  amount: z.number(),
  remaining: z.number().describe('What is left of it, the debits so far taken earliest-expiring first'),
  expires_at: z.string().nullable(),
  source: z.enum(['plan', 'api', 'pack', 'refund', 'rollover']),
  reason: z.string().nullable(),
  created_at: z.string(),
});
const balancesSchema = z.object({
  data: z.array(
    z.object({
      pool: z.string(),
      name: z.string(),
      balance: z.number(),
      held: z
        .number()
        .describe(
          'Credits held by open reservations of drawing features: part of the balance, not drawable until they ' +
            'settle (may exceed the balance after grants expired under them)',
        ),
      per: z.enum(['account', 'entity']).describe('Whose balance the pool keeps: the account, or each entity'),
      entity: z.string().optional().describe('The entity asked for (`?entity=`): its balance, held and grants'),
      granted_per_period: z.number().nullable(),
      unlimited: z.boolean(),
      grants: z.array(grantSchema.omit({ pool: true })),
      entities: z
        .array(
          z.object({
            entity: z.string(),
            name: z.string().nullable(),
            registered: z
              .boolean()
              .describe('false: deleted since, its balance kept (nothing draws from it or is granted to it)'),
            balance: z.number(),
            held: z.number(),
          }),
        )
        .optional()
        .describe(
          "A per-entity pool without `?entity=`: each entity's balance (then `balance` and `held` are their sums)",
        ),
    }),
  ),
});
const entityField = accountId.describe(
  'The entity (registered under the account) whose balance it is, e.g. `u_42`: required for a per-entity pool ' +
    '(409 `entity_required` without it, 404 when not registered), refused for a per-account one (409 ' +
    '`entity_not_taken`).',
);
const grantBody = z.object({
  pool: callerId.describe('The credits pool, e.g. `credits`.'),
  amount: z.number().int().min(1).max(1e12).describe('Whole credits to grant, e.g. 500.'),
  expires_at: z.iso
    .datetime({ offset: true })
    .transform((v) => new Date(v).toISOString())
    .nullable()
    .optional()
    .describe(
      "When the grant's unused credits expire, on the app's clock, e.g. `2027-01-01T00:00:00Z`. Omitted: never.",
    ),
  reason: z
    .string()
    .max(500)
    .nullable()
    .optional()
    .describe('Why, kept with the grant, e.g. `support: outage credit`. Omitted: none.'),
  entity: entityField.optional(),
});
const ledgerEntry = z.object({
  id: z.string(),
  pool: z.string(),
  entity: z.string().nullable().describe("The entity whose balance it moved; null: the account's"),
  grant: z.string().nullable(),
  amount: z.number().describe('Signed: a grant adds, a debit or an expiry takes'),
  kind: z.enum(['grant', 'debit', 'expiry', 'refund', 'reversal', 'topup']),
  feature: z.string().nullable(),
  request_id: z.string().nullable(),
  workflow_id: z.string().nullable(),
  ref: z
    .string()
    .nullable()
    .describe("The provider's payment it comes from: a top-up's capture id, a reversal's refund id; else null"),
  created_at: z.string(),
});

export const creditRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/credits',
    sdk: 'credits.get',
    auth: ['S', 'T'],
    mcp: {
      tool: 'get_credit_balance',
      use: "Use it to see what an account's credits can pay for now and when its grants expire.",
      level: 'R',
    },
    tags,
    summary: "The account's credit balances and grants",
    description:
      'Each credits pool the account gets from its plan or holds a balance in: `balance` (what draws can spend ' +
      'now), `granted_per_period` (what its plan grants a month; null when none or unlimited), and its live grants, ' +
      'earliest-expiring first, with what is left of each (draws spend the earliest-expiring grant first). A pool ' +
      'kept per entity (`per: "entity"`) lists each entity\'s balance under `entities` (its `balance` and `held` ' +
      'are their sums, its grants all of theirs); with `?entity=` the answer has only the per-entity pools, each ' +
      "with that entity's balance and grants (404 for an entity never registered under the account).",
    params: accountParams,
    query: z.object({ entity: accountId.optional().describe("One entity's balances, e.g. `u_42`. Omitted: all.") }),
    response: balancesSchema,
    handler: (s) => readCredits(s.em, s.app!.id, s.params.accountId, s.query),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/credits/grants',
    sdk: 'credits.grant',
    auth: ['S'],
    mcp: {
      tool: 'grant_credits',
      about: 'Send an Idempotency-Key: a retry with it grants once.',
      use: 'Use it to give an account credits (a promotion, support, a refund in credits). Returns the grant.',
      level: 'W',
    },
    tags,
    summary: 'Grant credits to an account',
    description:
      'Adds `amount` credits to the pool, expiring at `expires_at` (app clock) or never; a ledger row and ' +
      '`credits.granted` record it. Granted once per `Idempotency-Key` (a retry answers the same grant). A pool ' +
      'kept per entity grants to the `entity` named. 400 when `pool` is not a credits pool or `expires_at` has ' +
      'passed; 409 `entity_required` when `entity` is missing for a per-entity pool, `entity_not_taken` when given ' +
      'for a per-account one; 404 for an unknown account or pool, or an entity not registered under the account.',
    params: accountParams,
    body: grantBody,
    idempotency: 'atomic',
    status: 201,
    response: grantSchema.extend({ balance: z.number().describe("The pool's balance after the grant") }),
    handler: (s) =>
      grantCredits(ctxOf(s), s.params.accountId, s.body, { requestId: s.requestId, idempotency: s.idempotency }),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/credits/ledger',
    sdk: 'credits.ledger',
    auth: ['S'],
    tags,
    summary: "The account's credits ledger, newest first",
    description:
      'Every grant, debit, expiry, refund and top-up, signed, with its source (request, workflow); a balance is ' +
      "always its ledger's sum. Pass `next_cursor` as `cursor` for the next page. `entity` narrows it to one " +
      "entity's rows (404 for an entity never registered that has none).",
    params: accountParams,
    query: z.object({
      pool: callerId.optional().describe('Only this pool. Omitted: all.'),
      entity: accountId.optional().describe("Only this entity's rows, e.g. `u_42`. Omitted: all."),
      cursor: cursorParam.optional().describe("The last page's `next_cursor`. Omitted or empty: the first page."),
      limit: z.coerce.number().int().min(1).max(100).default(50),
    }),
    response: z.object({ data: z.array(ledgerEntry), next_cursor: z.string().nullable() }),
    handler: (s) => readLedger(s.em, s.app!.id, s.params.accountId, s.query),
  }),
];
