import { Migration } from '@mikro-orm/migrations';

/**
 * The change stream's usage flush never loses a counter's last value.
 *
 * Before: a usage change whose counter was already marked in `access_dirty` left the mark as it was
 * (`on conflict do nothing`). A flush running between that change's counter update and its commit deleted the mark
 * and read the counter as it was before the change, so the change's value had no event until the counter moved
 * again (the last of 40 adds was never sent once, on a loaded machine).
 *
 * Now:
 * - the trigger takes the existing mark's row lock (`do update`), so a flush deleting it waits for the change to
 *   commit; it still notifies only when a mark is new (`xmax = 0`: the row was inserted, not updated);
 * - the flush is `access_usage_flush(ms)`: one transaction, two statements. The first takes the flush clock and
 *   deletes the marks (waiting for changes that hold one); the second, on a new snapshot, reads those counters and
 *   writes their `usage` events. A change that marks after the delete finds no mark and makes a new one for the
 *   next flush. A crash rolls both back, so a mark is gone only with its event written.
 */
export class Migration20261230090000_access_flush_fresh extends Migration {
  override name = 'Migration20261230090000_access_flush_fresh';

  override up(): void {
    this.addSql(`create or replace function access_usage_changed() returns trigger language plpgsql as $fn$
declare marked int;
begin
  with m as (
    insert into access_dirty (app_id, account_id, entitlement_id)
      select distinct app_id, account_id, entitlement_id from new_rows
      on conflict (app_id, account_id, entitlement_id) do update set entitlement_id = excluded.entitlement_id
      returning (xmax = 0) as fresh)
  select count(*) filter (where fresh) into marked from m;
  if marked > 0 then perform pg_notify('offerkit_access_dirty', ''); end if;
  return null;
end
$fn$;`);
    this.addSql(`create function access_usage_flush(ms float8) returns table (clock boolean, flushed int)
language plpgsql volatile as $fn$
declare
  v_apps text[];
  v_accounts text[];
  v_features text[];
  n int;
begin
  update access_flush_clock set at = clock_timestamp() where at <= clock_timestamp() - make_interval(secs => ms / 1000);
  if not found then
    return query select false, 0;
    return;
  end if;
  with d as (delete from access_dirty returning app_id, account_id, entitlement_id)
  select array_agg(app_id), array_agg(account_id), array_agg(entitlement_id) into v_apps, v_accounts, v_features from d;
  -- A new statement, so a new snapshot: the counters as the changes that held a mark committed them.
  insert into access_changes (app_id, account_id, kind, data)
    select k.app_id, k.account_id, 'usage', jsonb_build_object('entitlementId', k.entitlement_id,
      'usage', coalesce(c.count, 0), 'held', coalesce(c.held, 0))
    from unnest(v_apps, v_accounts, v_features) as k (app_id, account_id, entitlement_id)
    left join usage_counters c on c.app_id = k.app_id and c.account_id = k.account_id
      and c.entitlement_id = k.entitlement_id and c.entity_id = ''
    order by k.app_id, k.account_id, k.entitlement_id;
  get diagnostics n = row_count;
  return query select true, n;
end
$fn$;`);
  }

  override down(): void {
    this.addSql(`drop function if exists access_usage_flush(float8);`);
    this.addSql(`create or replace function access_usage_changed() returns trigger language plpgsql as $fn$
declare marked int;
begin
  insert into access_dirty (app_id, account_id, entitlement_id)
    select distinct app_id, account_id, entitlement_id from new_rows on conflict do nothing;
  get diagnostics marked = row_count;
  if marked > 0 then perform pg_notify('offerkit_access_dirty', ''); end if;
  return null;
end
$fn$;`);
  }
}
