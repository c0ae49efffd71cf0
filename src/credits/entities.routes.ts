// Entities under an account (issue 42 item 5): registered explicitly, each with its own balance in per-entity pools;
// registering takes a seat of the entitlement that counts entities.
import { z } from 'zod';
import { accountParams } from '../accounts/accounts.schemas.js';
import { accountId } from '../http/schemas.js';
import { ctxOf, route } from '../http/route.js';
import { deleteEntity, listEntities, registerEntity } from './entities.service.js';

const tags = ['Credits'];

const entityId = accountId.describe(
  "The entity's id in your app, e.g. a user or workspace id `u_42` (kept as sent, like account ids).",
);
const entitySchema = z.object({ id: z.string(), name: z.string().nullable(), created_at: z.string() });
const entityParams = accountParams.extend({ entityId });

export const entityRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/entities',
    sdk: 'entities.list',
    auth: ['S', 'T'],
    mcp: {
      tool: 'list_entities',
      use: "Use it to see an account's members (users, workspaces) that hold seats and per-entity credits.",
      level: 'R',
    },
    tags,
    summary: "The account's entities",
    description:
      'The entities registered under the account, in id order: each holds one seat of the entitlement that counts ' +
      'entities and its own balance in each per-entity pool (`GET .../credits` lists them). An account token reads ' +
      'only its own account (403). 404 for an unknown account.',
    params: accountParams,
    response: z.object({ data: z.array(entitySchema) }),
    handler: (s) => listEntities(ctxOf(s), s.params.accountId),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/namespaces/:accountId/entities',
    sdk: 'entities.create',
    auth: ['S'],
    mcp: {
      tool: 'create_entity',
      about: 'Send an Idempotency-Key: a retry with it registers once.',
      use:
        'Use it to add a member (a user, a workspace, a project) to an account on a team plan: it takes a seat and ' +
        'gets the per-entity credits its plan grants. Returns the entity.',
      level: 'W',
    },
    tags,
    summary: 'Register an entity under an account',
    description:
      'Registers `id` and, when an entitlement of the app counts entities (`"counts": "entities"`), adds 1 to its ' +
      'counter in the same transaction: past a blocking limit the entity is refused with the `limit_reached` 402 ' +
      "(nothing registered). The entity gets each per-entity pool's plan grant for the period under way (once per " +
      'period per id). 409 when the id is already registered; 404 for an unknown account.',
    params: accountParams,
    body: z.object({
      id: entityId,
      name: z.string().max(200).nullable().optional().describe('A name to show, e.g. `Ada Lovelace`. Omitted: none.'),
    }),
    status: 201,
    errors: [402, 409],
    response: entitySchema,
    handler: (s) => registerEntity(ctxOf(s), s.params.accountId, s.body, s.origin),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/namespaces/:accountId/entities/:entityId',
    sdk: 'entities.delete',
    auth: ['S'],
    mcp: {
      tool: 'delete_entity',
      use: 'Use it when a member leaves: the seat is freed. Returns the deleted entity.',
      level: 'F',
    },
    tags,
    summary: 'Delete an entity',
    description:
      'Unregisters it and gives its seat back (the counter that counts entities -1), in one transaction. Its ' +
      'per-entity balances, grants and ledger are kept (nothing draws from them or is granted to them; registered ' +
      'again under the same id, it finds them and gets no second plan grant for the same period). 404 for an ' +
      'unknown account or entity.',
    params: entityParams,
    response: entitySchema,
    handler: (s) => deleteEntity(ctxOf(s), s.params.accountId, s.params.entityId),
  }),
];
