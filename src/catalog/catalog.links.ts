// The link tables (a plan's or an incentive's entitlements with their limits, and add-ons): reading, inserting,
// changing and deleting links, and who uses a linked item.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Limit } from './catalog.present.js';

export const LINKS = {
  planEntitlements: { table: 'plan_entitlements', owner: 'plan_id', ref: 'entitlement_id', limit: true },
  planAddons: { table: 'plan_addons', owner: 'plan_id', ref: 'addon_id', limit: false },
  incentiveEntitlements: { table: 'incentive_entitlements', owner: 'incentive_id', ref: 'entitlement_id', limit: true },
  incentiveAddons: { table: 'incentive_addons', owner: 'incentive_id', ref: 'addon_id', limit: false },
} as const;
export type Link = (typeof LINKS)[keyof typeof LINKS];

/** owner id -> its links in attach order. */
export async function readLinks(
  em: EntityManager,
  link: Link,
  appId: string,
  ownerIds?: string[],
): Promise<Map<string, Limit[]>> {
  // An empty list would be `in ()`, which PostgreSQL rejects.
  if (ownerIds && ownerIds.length === 0) return new Map();
  const rows = await em.execute<{ owner: string; ref: string; max: string | null }[]>(
    `select ${link.owner} as owner, ${link.ref} as ref, ${link.limit ? 'max' : 'null as max'} from ${link.table}
      where app_id = ? ${ownerIds ? `and ${link.owner} in (?)` : ''} order by seq`,
    ownerIds ? [appId, ownerIds] : [appId],
  );
  const out = new Map<string, Limit[]>();
  for (const r of rows) {
    const list = out.get(r.owner) ?? [];
    list.push({ id: r.ref, max: r.max === null ? null : Number(r.max) });
    out.set(r.owner, list);
  }
  return out;
}

export async function insertLink(
  em: EntityManager,
  link: Link,
  appId: string,
  owner: string,
  ref: string,
  max: number | null,
): Promise<boolean> {
  const res = await em.execute<{ affectedRows: number }>(
    `insert into ${link.table} (app_id, ${link.owner}, ${link.ref}${link.limit ? ', max' : ''})
      values (?, ?, ?${link.limit ? ', ?' : ''}) on conflict do nothing`,
    link.limit ? [appId, owner, ref, max] : [appId, owner, ref],
    'run',
  );
  return res.affectedRows === 1;
}

export async function updateLinkMax(
  em: EntityManager,
  link: Link,
  appId: string,
  owner: string,
  ref: string,
  max: number | null,
): Promise<boolean> {
  const res = await em.execute<{ affectedRows: number }>(
    `update ${link.table} set max = ? where app_id = ? and ${link.owner} = ? and ${link.ref} = ?`,
    [max, appId, owner, ref],
    'run',
  );
  return res.affectedRows === 1;
}

export async function deleteLinks(
  em: EntityManager,
  link: Link,
  appId: string,
  owner: string,
  ref?: string,
): Promise<number> {
  const res = await em.execute<{ affectedRows: number }>(
    `delete from ${link.table} where app_id = ? and ${link.owner} = ?${ref ? ` and ${link.ref} = ?` : ''}`,
    ref ? [appId, owner, ref] : [appId, owner],
    'run',
  );
  return res.affectedRows;
}

/** Owners (plans or incentives) that reference a record, for the 409 of a delete. */
export async function ownersOf(em: EntityManager, link: Link, appId: string, ref: string): Promise<string[]> {
  const rows = await em.execute<{ owner: string }[]>(
    `select ${link.owner} as owner from ${link.table} where app_id = ? and ${link.ref} = ? order by seq`,
    [appId, ref],
  );
  return rows.map((r) => r.owner);
}

export async function accountsUsing(
  em: EntityManager,
  appId: string,
  column: 'plan_id' | 'incentive_id',
  id: string,
): Promise<number> {
  const rows = await em.execute<{ n: string }[]>(
    `select count(*) as n from accounts where app_id = ? and ${column} = ?`,
    [appId, id],
  );
  return Number(rows[0].n);
}
