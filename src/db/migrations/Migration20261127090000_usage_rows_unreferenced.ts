import { Migration } from '@mikro-orm/migrations';

/**
 * The usage history (`usage_events`) and the ingested ids (`usage_ingested`) no longer carry a foreign key to
 * `apps`: each row written checked it, which locks the app's row (`FOR KEY SHARE`) once per usage change, so 500
 * times for a 500-event batch, and every concurrent writer of one app shared that lock. Without them batch ingest
 * runs about 15% faster (`BENCH_ONLY=metering npm run bench`, docs/benchmarks.md).
 *
 * What the keys did is kept:
 * - Deleting an app deletes its rows: the trigger below, after the app's cascades (triggers fire in name order, and
 *   the cascades' internal triggers, `RI_ConstraintTrigger_*`, sort first). Its statements see what concurrent
 *   writers committed: each of them holds a lock the cascades wait for first.
 * - No row outlives its app when a write races the delete: every write of these rows takes a lock the delete
 *   conflicts with. A usage change updates its counter (the cascade to `usage_counters` waits for it) or creates it
 *   (a key check on the app); a batch locks the app's row once (`INGEST_SQL`, `FOR KEY SHARE`) and finds no app
 *   once the delete has committed; an import creates accounts (a key check on the app).
 */
export class Migration20261127090000_usage_rows_unreferenced extends Migration {
  override name = 'Migration20261127090000_usage_rows_unreferenced';

  override up(): void {
    this.addSql(`alter table "usage_events" drop constraint if exists "usage_events_app_id_fkey";`);
    this.addSql(`alter table "usage_ingested" drop constraint if exists "usage_ingested_app_id_fkey";`);
    this.addSql(`create function apps_deleted_usage_rows() returns trigger language plpgsql as $fn$
begin
  delete from usage_events where app_id = old.id;
  delete from usage_ingested where app_id = old.id;
  return null;
end
$fn$;`);
    this.addSql(`create trigger apps_deleted_usage_rows after delete on apps for each row
      execute function apps_deleted_usage_rows();`);
  }

  override down(): void {
    this.addSql(`drop trigger if exists apps_deleted_usage_rows on apps;`);
    this.addSql(`drop function if exists apps_deleted_usage_rows();`);
    this.addSql(
      `alter table "usage_events" add constraint "usage_events_app_id_fkey" foreign key ("app_id") ` +
        `references "apps" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "usage_ingested" add constraint "usage_ingested_app_id_fkey" foreign key ("app_id") ` +
        `references "apps" ("id") on delete cascade;`,
    );
  }
}
