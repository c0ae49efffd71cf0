import { Migration } from '@mikro-orm/migrations';

/**
 * The daily usage roll-up (src/housekeeping/rollup.ts): totals per UTC day, kept by an hourly Temporal
 * Schedule, so analytics read whole days from here and only the partial edges from `usage_events`.
 *
 * - `usage_rollups`: per app, `through`, the first day not rolled up (`-infinity`: none yet). Created
 *   with the app (trigger), so it exists before any usage row can.
 * - `usage_daily`: calls and amount per app, account, day and entitlement; `usage_daily_app` the same
 *   without the account (app-wide views read far fewer rows).
 * - `usage_rollup_late`: a usage row written after its day was rolled up (batch ingest and import take
 *   timestamps) is recorded here by a trigger, in its own transaction, so analytics count it at once; the
 *   next roll-up run folds these rows into the daily tables. The trigger's WHEN clause lets rows dated
 *   today through without calling anything, so the usage hot path pays nothing. The trigger takes the
 *   app's `usage_rollups` row FOR SHARE and a roll-up run takes it FOR UPDATE, so a late row is counted
 *   either by the run (it committed first) or here (it saw the run's new `through`), never both or neither.
 */
export class Migration20261124092000_usage_rollup extends Migration {
  override name = 'Migration20261124092000_usage_rollup';

  override up(): void {
    this.addSql(`create table "usage_rollups" (
      "app_id" varchar(255) not null primary key references "apps" ("id") on delete cascade,
      "through" date not null default '-infinity',
      "updated_at" timestamptz not null default now());`);
    this.addSql(`insert into "usage_rollups" ("app_id") select "id" from "apps";`);
    this.addSql(`create function apps_rollup_state() returns trigger language plpgsql as $fn$
begin
  insert into usage_rollups (app_id) values (new.id);
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger apps_rollup_state after insert on apps for each row execute function apps_rollup_state();`,
    );

    this.addSql(`create table "usage_daily" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "account_id" varchar(255) not null,
      "day" date not null,
      "entitlement_id" varchar(255) not null,
      "calls" bigint not null,
      "amount" bigint not null,
      primary key ("app_id", "account_id", "day", "entitlement_id"));`);
    this.addSql(
      `create index "usage_daily_day_index" on "usage_daily" ("app_id", "day")
      include ("account_id", "entitlement_id", "calls", "amount");`,
    );
    this.addSql(`create table "usage_daily_app" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "day" date not null,
      "entitlement_id" varchar(255) not null,
      "calls" bigint not null,
      "amount" bigint not null,
      primary key ("app_id", "day", "entitlement_id"));`);
    this.addSql(`create table "usage_rollup_late" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "day" date not null,
      "account_id" varchar(255) not null,
      "entitlement_id" varchar(255) not null,
      "amount" bigint not null);`);
    this.addSql(`create index "usage_rollup_late_index" on "usage_rollup_late" ("app_id", "day");`);

    this.addSql(`create function usage_events_late() returns trigger language plpgsql as $fn$
declare
  t date;
begin
  select r.through into t from usage_rollups r where r.app_id = new.app_id for share;
  if t is not null and (new.created_at at time zone 'UTC')::date < t then
    insert into usage_rollup_late (app_id, day, account_id, entitlement_id, amount)
    values (new.app_id, (new.created_at at time zone 'UTC')::date, new.account_id, new.entitlement_id, new.amount);
  end if;
  return null;
end
$fn$;`);
    this.addSql(`create trigger usage_events_late after insert on usage_events for each row
      when (new.created_at < date_trunc('day', now() at time zone 'UTC') at time zone 'UTC')
      execute function usage_events_late();`);
  }

  override down(): void {
    this.addSql(`drop trigger if exists usage_events_late on usage_events;`);
    this.addSql(`drop function if exists usage_events_late();`);
    this.addSql(`drop table if exists "usage_rollup_late";`);
    this.addSql(`drop table if exists "usage_daily_app";`);
    this.addSql(`drop table if exists "usage_daily";`);
    this.addSql(`drop trigger if exists apps_rollup_state on apps;`);
    this.addSql(`drop function if exists apps_rollup_state();`);
    this.addSql(`drop table if exists "usage_rollups";`);
  }
}
