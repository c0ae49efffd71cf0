// Entities under an account as other services read them: the rules a call naming an `entity` meets, and the list.
import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';
import { conflict, notFound } from '../errors.js';
import { ISO } from './credits.sql.js';

export interface EntityRow {
  id: string;
  name: string | null;
  created_at: string;
}

export const COLUMNS = `id, name, to_char(created_at at time zone 'UTC', '${ISO}') as created_at`;

/**
 * Whether a call may name `entity` for a pool: a per-entity pool needs an entity registered under the account (400
 * without one, 404 for one that is not), a per-account pool takes none (400).
 */
export function entityRule(
  pool: string,
  perEntity: boolean,
  entity: string | undefined,
  exists: boolean,
  accountId: string,
): void {
  if (perEntity && !entity)
    throw conflict(`entity: pool ${pool} is kept per entity; name the entity whose balance it is`, {
      reason: 'entity_required',
    });
  if (!perEntity && entity)
    throw conflict(`entity: pool ${pool} is kept per account; it takes no entity`, { reason: 'entity_not_taken' });
  if (perEntity && entity && !exists) throw notFound(`Entity ${entity} under account ${accountId}`);
}

/** 404 unless `entity` is registered under the account. */
export async function requireEntity(em: EntityManager, appId: string, accountId: string, entity: string) {
  const [row] = await sql<{ ok: boolean }>(
    em,
    'select exists (select 1 from account_entities where app_id = $1 and account_id = $2 and id = $3) as ok',
    [appId, accountId, entity],
  );
  if (!row?.ok) throw notFound(`Entity ${entity} under account ${accountId}`);
}

/** The account's entities in id order (no existence check of the account). */
export async function listEntityRows(em: EntityManager, appId: string, accountId: string): Promise<EntityRow[]> {
  return sql<EntityRow>(
    em,
    `select ${COLUMNS} from account_entities where app_id = $1 and account_id = $2 order by id`,
    [appId, accountId],
  );
}
