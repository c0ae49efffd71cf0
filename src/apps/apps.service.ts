import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { longStatements, sql } from '../db/sql.js';
import { newId } from '../ids.js';
import { App, type IApp } from './apps.entities.js';
import { type createAppBody, type updateAppBody } from './apps.schemas.js';

export async function createApp(em: EntityManager, input: z.output<typeof createAppBody>): Promise<IApp> {
  const app = em.create(App, {
    id: newId('app'),
    name: input.name,
    plan: input.plan ?? null,
    apiKey: newId('secretKey'),
    publicKey: newId('publicKey'),
    checkoutUrl: null,
    planChangePolicy: null,
    dunning: null,
  });
  await em.flush();
  return app;
}

/**
 * A committed change to an app row, as the `apps` trigger announced it to every API process
 * (`<app id> <transaction id>`); the route waits for `deps.credentials.confirm(change)` before it answers.
 * Null when nothing changed.
 */
export type AppChange = string | null;

const CHANGE = `id || ' ' || pg_current_xact_id()::text as change`;

export async function updateApp(
  em: EntityManager,
  record: IApp,
  input: z.output<typeof updateAppBody>,
): Promise<{ app: IApp; change: AppChange }> {
  return em.transactional(async (t) => {
    const app = await t.findOneOrFail(App, { id: record.id });
    if (input.name !== undefined) app.name = input.name;
    if (input.plan !== undefined) app.plan = input.plan;
    if (input.checkout_url !== undefined) app.checkoutUrl = input.checkout_url;
    if (input.dunning !== undefined)
      app.dunning = input.dunning && {
        ...(app.dunning ?? {}),
        ...Object.fromEntries(Object.entries(input.dunning).filter(([, v]) => v !== undefined)),
      };
    if (input.plan_change_policy !== undefined)
      app.planChangePolicy = input.plan_change_policy && {
        ...(app.planChangePolicy ?? {}),
        ...input.plan_change_policy,
      };
    await t.flush();
    // A transaction id only when the flush wrote the row (an unchanged app sends no notification).
    const [row] = await sql<{ change: string | null }>(
      t,
      `select $1 || ' ' || pg_current_xact_id_if_assigned()::text as change`,
      [record.id],
    );
    return { app, change: row.change };
  });
}

/**
 * Deletes the app; every table it owns references it with ON DELETE CASCADE, so an app with a long history takes
 * longer than a request's statement may: the long bound, for this transaction only.
 */
export async function deleteApp(em: EntityManager, app: IApp): Promise<AppChange> {
  const [row] = await em.transactional(async (t) => {
    await longStatements(t);
    const rows = await sql<{ change: string }>(t, `delete from apps where id = $1 returning ${CHANGE}`, [app.id]);
    // The change stream's rows carry the app id without a reference (the cascade's own deletes write more of them,
    // through the triggers): gone with the app, in the same transaction.
    await sql(t, 'delete from access_changes where app_id = $1', [app.id]);
    await sql(t, 'delete from access_dirty where app_id = $1', [app.id]);
    return rows;
  });
  return row?.change ?? null;
}

/** A new secret key; the old one and every account token signed with it stop working at once. */
export async function regenerateSecretKey(
  em: EntityManager,
  record: IApp,
): Promise<{ key: string; change: AppChange }> {
  const [row] = await sql<{ key: string; change: string }>(
    em,
    `update apps set api_key = $2, updated_at = now() where id = $1 returning api_key as key, ${CHANGE}`,
    [record.id, newId('secretKey')],
  );
  return row;
}

export async function regeneratePublicKey(
  em: EntityManager,
  record: IApp,
): Promise<{ key: string; change: AppChange }> {
  const [row] = await sql<{ key: string; change: string }>(
    em,
    `update apps set public_key = $2, updated_at = now() where id = $1 returning public_key as key, ${CHANGE}`,
    [record.id, newId('publicKey')],
  );
  return row;
}

/**
 * Makes the apps of a workspace (the spec's org) read-only (the demo's, once seeded): every write but the admin
 * key's is refused from then on (src/http/guard.ts). Returns the changes to confirm with every API process.
 */
export async function markWorkspaceReadOnly(em: EntityManager, orgId: string): Promise<string[]> {
  const rows = await sql<{ change: string }>(
    em,
    `update apps set read_only = true, updated_at = now()
      where not read_only and id in (select jsonb_array_elements_text(app_ids) from orgs where id = $1)
      returning ${CHANGE}`,
    [orgId],
  );
  return rows.map((r) => r.change);
}
