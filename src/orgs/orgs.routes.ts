import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { App } from '../apps/apps.entities.js';
import { appSchema } from '../apps/apps.schemas.js';
import { presentApp } from '../apps/apps.present.js';
import { flushOrConflict } from '../db/conflict.js';
import { missingReference, notFound } from '../errors.js';
import { route } from '../http/route.js';
import { iso } from '../time.js';
import { Org, type IOrg } from './orgs.entities.js';

// Workspaces (orgs): an ordered list of app ids. Admin only. Org ids are kept as sent.
const tags = ['Orgs'];
const orgParams = z.object({ orgId: z.string().min(1).max(255) });
const appIds = z
  .array(z.string().min(1))
  .max(1000)
  .refine((ids) => new Set(ids).size === ids.length, 'must not repeat an app id')
  .meta({ uniqueItems: true });
const createBody = z.object({
  id: z.string().trim().min(1).max(255),
  name: z.string().max(200).nullable().optional(),
  app_ids: appIds.optional(),
});
const updateBody = z.object({ name: z.string().max(200).nullable().optional(), app_ids: appIds.optional() });
const orgSchema = z.object({
  id: z.string(),
  name: z.string().nullable(),
  app_ids: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});

const present = (o: IOrg) => ({
  id: o.id,
  name: o.name ?? null,
  app_ids: o.appIds,
  created_at: iso(o.createdAt)!,
  updated_at: iso(o.updatedAt)!,
});

async function findOrg(em: EntityManager, id: string) {
  const org = await em.findOne(Org, { id });
  if (!org) throw notFound(`Org ${id}`);
  return org;
}

/** Every listed app must exist when the list is saved. */
async function requireApps(em: EntityManager, ids: string[]) {
  if (!ids.length) return;
  const found = new Set((await em.find(App, { id: { $in: ids } }, { fields: ['id'] })).map((a) => a.id));
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw missingReference(`app_ids: app ${missing} does not exist`);
}

export const orgRoutes = [
  route({
    method: 'GET',
    path: '/orgs',
    sdk: 'orgs.list',
    auth: ['A'],
    tags,
    summary: 'List orgs',
    response: z.array(orgSchema),
    handler: async ({ em }) => (await em.find(Org, {}, { orderBy: { createdAt: 'asc', id: 'asc' } })).map(present),
  }),
  route({
    method: 'POST',
    path: '/orgs',
    sdk: 'orgs.create',
    auth: ['A'],
    tags,
    summary: 'Create an org',
    body: createBody,
    status: 201,
    errors: [409],
    response: orgSchema,
    handler: async ({ em, body }) => {
      await requireApps(em, body.app_ids ?? []);
      const org = em.create(Org, { id: body.id, name: body.name ?? null, appIds: body.app_ids ?? [] });
      await flushOrConflict(em, `Org ${body.id} already exists`);
      return present(org);
    },
  }),
  route({
    method: 'GET',
    path: '/orgs/:orgId',
    sdk: 'orgs.get',
    auth: ['A'],
    tags,
    summary: 'Get an org',
    params: orgParams,
    response: orgSchema,
    handler: async ({ em, params }) => present(await findOrg(em, params.orgId)),
  }),
  route({
    method: 'PATCH',
    path: '/orgs/:orgId',
    sdk: 'orgs.update',
    auth: ['A'],
    tags,
    summary: 'Update an org',
    description: '`app_ids`, when sent, replaces the ordered list.',
    params: orgParams,
    body: updateBody,
    response: orgSchema,
    handler: async ({ em, deps, params, body }) => {
      const org = await findOrg(em, params.orgId);
      const removed = body.app_ids === undefined ? [] : org.appIds.filter((id) => !body.app_ids!.includes(id));
      if (body.app_ids !== undefined) {
        await requireApps(em, body.app_ids);
        org.appIds = body.app_ids;
      }
      if (body.name !== undefined) org.name = body.name;
      await em.flush();
      // An app taken out of a workspace ends the MCP connections its members approved, in every API process.
      for (const appId of removed) await deps.credentials.announce(appId);
      return present(org);
    },
  }),
  route({
    method: 'DELETE',
    path: '/orgs/:orgId',
    sdk: 'orgs.delete',
    auth: ['A'],
    tags,
    summary: 'Delete an org (its apps stay)',
    params: orgParams,
    response: orgSchema,
    handler: async ({ em, deps, params }) => {
      const org = await findOrg(em, params.orgId);
      await em.nativeDelete(Org, { id: org.id });
      // Its members' MCP connections on its apps end in every API process.
      for (const appId of org.appIds) await deps.credentials.announce(appId);
      return present(org);
    },
  }),
  route({
    method: 'GET',
    path: '/orgs/:orgId/apps',
    sdk: 'orgs.listApps',
    auth: ['A'],
    tags,
    summary: "The org's apps in app_ids order",
    description: 'Apps deleted since they were listed are left out.',
    params: orgParams,
    response: z.array(appSchema),
    handler: async ({ em, params }) => {
      const org = await findOrg(em, params.orgId);
      const apps = new Map((await em.find(App, { id: { $in: org.appIds } })).map((a) => [a.id, a]));
      return org.appIds.filter((id) => apps.has(id)).map((id) => presentApp(apps.get(id)!));
    },
  }),
];
