import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { sql } from '../db/sql.js';
import { notFound } from '../errors.js';
import { limitParam } from '../http/pagination.js';
import { Reply, ctxOf, route } from '../http/route.js';
import { boundedJson, deleted, deletedSchema } from '../http/schemas.js';
import { iso } from '../time.js';

const tags = ['Agent threads'];

const threadParams = appIdParams.extend({ threadId: z.string().min(1).max(255) });
const putBody = z.object({
  user_id: z.string().min(1).max(255),
  messages: boundedJson(z.array(z.unknown()).max(10_000), 1_000_000, 16),
  title: z.string().max(500).nullable().optional(),
});
const patchBody = z.object({ title: z.string().max(500).nullable() });
const listQuery = z.object({ user_id: z.string().max(255).optional(), limit: limitParam(50, 100) });

const threadSchema = z.object({
  id: z.string(),
  user_id: z.string(),
  title: z.string().nullable(),
  messages: z.array(z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
});
const summarySchema = threadSchema.omit({ messages: true }).extend({ message_count: z.number() });

interface Row {
  id: string;
  user_id: string;
  title: string | null;
  messages: unknown[];
  created_at: Date;
  updated_at: Date;
}

const present = (r: Row) => ({
  id: r.id,
  user_id: r.user_id,
  title: r.title,
  messages: r.messages,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

async function findThread(em: EntityManager, appId: string, id: string): Promise<Row> {
  const [row] = await sql<Row>(
    em,
    'select id, user_id, title, messages, created_at, updated_at from agent_threads where app_id = $1 and id = $2',
    [appId, id],
  );
  if (!row) throw notFound('Thread');
  return row;
}

export const agentRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/agent/threads',
    sdk: 'agentThreads.list',
    auth: ['A'],
    tags,
    summary: 'Agent threads, most recently updated first (without their messages)',
    params: appIdParams,
    query: listQuery,
    response: z.object({ data: z.array(summarySchema) }),
    handler: async (s) => {
      const rows = await sql<Omit<Row, 'messages'> & { message_count: number }>(
        s.em,
        `select id, user_id, title, jsonb_array_length(messages) as message_count, created_at, updated_at from
          agent_threads
          where app_id = $1 and ($2::text is null or user_id = $2) order by updated_at desc, id limit $3`,
        [ctxOf(s).app.id, s.query.user_id ?? null, s.query.limit],
      );
      return {
        data: rows.map((r) => ({
          id: r.id,
          user_id: r.user_id,
          title: r.title,
          message_count: Number(r.message_count),
          created_at: iso(r.created_at)!,
          updated_at: iso(r.updated_at)!,
        })),
      };
    },
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/agent/threads/:threadId',
    sdk: 'agentThreads.get',
    auth: ['A'],
    tags,
    summary: 'An agent thread',
    params: threadParams,
    response: threadSchema,
    handler: async (s) => present(await findThread(s.em, ctxOf(s).app.id, s.params.threadId)),
  }),
  route({
    method: 'PUT',
    path: '/apps/:appId/agent/threads/:threadId',
    sdk: 'agentThreads.put',
    auth: ['A'],
    tags,
    summary: 'Create or replace an agent thread',
    description: '201 when created, 200 when an existing thread was replaced.',
    params: threadParams,
    body: putBody,
    response: threadSchema,
    replies: { 201: { description: 'The thread was created', schema: threadSchema } },
    handler: async (s) => {
      const [row] = await sql<Row & { created: boolean }>(
        s.em,
        `insert into agent_threads (app_id, id, user_id, title, messages) values ($1, $2, $3, $4, $5)
         on conflict (app_id, id) do update set user_id = excluded.user_id, title = excluded.title, messages =
           excluded.messages, updated_at = now()
         returning id, user_id, title, messages, created_at, updated_at, (xmax = 0) as created`,
        [ctxOf(s).app.id, s.params.threadId, s.body.user_id, s.body.title ?? null, JSON.stringify(s.body.messages)],
      );
      return new Reply(row.created ? 201 : 200, present(row));
    },
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/agent/threads/:threadId',
    sdk: 'agentThreads.rename',
    auth: ['A'],
    tags,
    summary: 'Rename an agent thread',
    params: threadParams,
    body: patchBody,
    response: threadSchema,
    handler: async (s) => {
      const [row] = await sql<Row>(
        s.em,
        `update agent_threads set title = $3, updated_at = now() where app_id = $1 and id = $2 returning id, user_id,
          title, messages, created_at, updated_at`,
        [ctxOf(s).app.id, s.params.threadId, s.body.title],
      );
      if (!row) throw notFound('Thread');
      return present(row);
    },
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/agent/threads/:threadId',
    sdk: 'agentThreads.delete',
    auth: ['A'],
    tags,
    summary: 'Delete an agent thread',
    params: threadParams,
    response: deletedSchema,
    handler: async (s) => {
      const rows = await sql(s.em, 'delete from agent_threads where app_id = $1 and id = $2 returning id', [
        ctxOf(s).app.id,
        s.params.threadId,
      ]);
      if (rows.length === 0) throw notFound('Thread');
      return deleted(s.params.threadId);
    },
  }),
];
