import { Migration } from '@mikro-orm/migrations';

/** Tables whose rows make an app's catalog (a change to any is one `catalog` event per app and statement). */
export const CATALOG_TABLES = [
  'plans',
  'entitlements',
  'addons',
  'incentives',
  'plan_entitlements',
  'plan_addons',
  'incentive_entitlements',
  'incentive_addons',
] as const;

/** Tables whose rows belong to one account (`account` events), with the column naming the account. */
export const ACCOUNT_TABLES: Record<string, string> = {
  accounts: 'id',
  account_extras: 'account_id',
  account_addons: 'account_id',
  subscriptions: 'account_id',
};

/**
 * The change stream (GET /apps/:appId/stream, src/stream): `access_changes` holds every change that affects access,
 * written by triggers in the transaction of the change itself, whatever door it came through (REST, MCP, the console,
 * a workflow, an import). A row's place is `(tx, id)`: readers take rows of finished transactions only (`tx` below
 * the oldest running one), so a row committed late never lands behind a reader's position. Usage counters change on
 * the hottest path: their trigger only marks the counter in `access_dirty` (once until it is flushed), and the stream
 * hub turns the marks into `usage` events with the counters' values a few times a second (`access_flush_clock`
 * keeps that rate across processes). `access_horizon` is the last place pruned (retention): a reader behind it
 * gets `resync`. No foreign keys: an app's deletion cascades through tables whose triggers write here.
 */
export class Migration20261224090000_access_changes extends Migration {
  override name = 'Migration20261224090000_access_changes';

  override up(): void {
    this.addSql(`create table "access_changes" (
      "id" bigserial not null,
      "tx" xid8 not null default pg_current_xact_id(),
      "app_id" varchar(255) not null,
      "account_id" varchar(255) null,
      "kind" varchar(20) not null,
      "data" jsonb not null default '{}',
      "created_at" timestamptz not null default now(),
      primary key ("tx", "id"));`);
    this.addSql(`create index "access_changes_app_index" on "access_changes" ("app_id", "tx", "id");`);
    this.addSql(`create index "access_changes_created_index" on "access_changes" ("created_at");`);
    this.addSql(`create table "access_horizon" ("one" boolean primary key default true check ("one"),
      "tx" xid8 not null, "id" bigint not null);`);
    this.addSql(`insert into "access_horizon" ("tx", "id") values ('0'::xid8, 0);`);
    this.addSql(`create table "access_dirty" (
      "app_id" varchar(255) not null, "account_id" varchar(255) not null, "entitlement_id" varchar(255) not null,
      primary key ("app_id", "account_id", "entitlement_id"));`);
    this.addSql(`create table "access_flush_clock" ("one" boolean primary key default true check ("one"),
      "at" timestamptz not null);`);
    this.addSql(`insert into "access_flush_clock" ("at") values ('-infinity');`);

    // Readers are woken on offerkit_access (one notification per transaction: PostgreSQL folds equal payloads).
    this.addSql(`create function access_changes_notify() returns trigger language plpgsql as $fn$
begin
  perform pg_notify('offerkit_access', '');
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger access_changes_notify after insert on access_changes for each statement ` +
        `execute function access_changes_notify();`,
    );

    this.addSql(`create function access_catalog_changed() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'DELETE' then
    insert into access_changes (app_id, kind, data)
      select distinct app_id, 'catalog', jsonb_build_object('table', tg_table_name) from old_rows;
  else
    insert into access_changes (app_id, kind, data)
      select distinct app_id, 'catalog', jsonb_build_object('table', tg_table_name) from new_rows;
  end if;
  return null;
end
$fn$;`);
    this.addSql(`create function access_account_changed() returns trigger language plpgsql as $fn$
declare col text := tg_argv[0];
begin
  if tg_op = 'DELETE' then
    execute format('insert into access_changes (app_id, account_id, kind)
      select distinct app_id, %I, ''account'' from old_rows', col);
  elsif tg_op = 'UPDATE' then
    execute format('insert into access_changes (app_id, account_id, kind)
      select app_id, %I, ''account'' from new_rows union select app_id, %I, ''account'' from old_rows', col, col);
  else
    execute format('insert into access_changes (app_id, account_id, kind)
      select distinct app_id, %I, ''account'' from new_rows', col);
  end if;
  return null;
end
$fn$;`);
    this.addSql(`create function access_usage_changed() returns trigger language plpgsql as $fn$
declare marked int;
begin
  insert into access_dirty (app_id, account_id, entitlement_id)
    select distinct app_id, account_id, entitlement_id from new_rows on conflict do nothing;
  get diagnostics marked = row_count;
  if marked > 0 then perform pg_notify('offerkit_access_dirty', ''); end if;
  return null;
end
$fn$;`);
    for (const table of CATALOG_TABLES) this.statementTriggers(table, 'access_catalog_changed()');
    for (const [table, col] of Object.entries(ACCOUNT_TABLES))
      this.statementTriggers(table, `access_account_changed('${col}')`);
    for (const op of ['insert', 'update'] as const)
      this.addSql(
        `create trigger access_usage_${op} after ${op} on usage_counters referencing new table as new_rows ` +
          `for each statement execute function access_usage_changed();`,
      );
  }

  /** Transition tables allow one event per trigger: three triggers per table. */
  private statementTriggers(table: string, fn: string) {
    this.addSql(
      `create trigger access_${table}_insert after insert on "${table}" referencing new table as new_rows ` +
        `for each statement execute function ${fn};`,
    );
    this.addSql(
      `create trigger access_${table}_update after update on "${table}" referencing old table as old_rows ` +
        `new table as new_rows for each statement execute function ${fn};`,
    );
    this.addSql(
      `create trigger access_${table}_delete after delete on "${table}" referencing old table as old_rows ` +
        `for each statement execute function ${fn};`,
    );
  }

  override down(): void {
    for (const table of [...CATALOG_TABLES, ...Object.keys(ACCOUNT_TABLES)])
      for (const op of ['insert', 'update', 'delete'])
        this.addSql(`drop trigger if exists access_${table}_${op} on "${table}";`);
    for (const op of ['insert', 'update']) this.addSql(`drop trigger if exists access_usage_${op} on usage_counters;`);
    this.addSql(`drop function if exists access_usage_changed();`);
    this.addSql(`drop function if exists access_account_changed();`);
    this.addSql(`drop function if exists access_catalog_changed();`);
    this.addSql(`drop table if exists "access_changes", "access_horizon", "access_dirty", "access_flush_clock";`);
    this.addSql(`drop function if exists access_changes_notify();`);
  }
}
