import { Migration } from '@mikro-orm/migrations';

/**
 * The roll-up also covers the closed hours of its first open day (src/housekeeping/rollup.ts), so what a query reads
 * raw is at most the last hour or so, whatever the day's volume.
 *
 * - `usage_rollups.rolled_to`: with `through`, the instant before which every usage row is in the roll-up. When it
 *   falls inside the day `through` (after its midnight), `usage_daily` holds that day's rows before it (a partial
 *   day, recomputed by each run); otherwise the roll-up ends at `through`'s midnight, as before.
 * - `usage_rolled_to(through, rolled_to)`: that instant, for the trigger and the queries alike.
 * - The late-row trigger compares a row's time with that instant. Its WHEN clause lets rows dated in the current
 *   UTC hour through without calling anything (a run never rolls up an hour that has not ended, nor one in which a
 *   transaction still open began), so the usage hot path still pays nothing.
 */
export class Migration20261129090000_usage_rollup_hours extends Migration {
  override name = 'Migration20261129090000_usage_rollup_hours';

  override up(): void {
    this.addSql(`alter table "usage_rollups" add column "rolled_to" timestamptz not null default '-infinity';`);
    this.addSql(`update "usage_rollups" set "rolled_to" = "through"::timestamp at time zone 'UTC';`);
    this.addSql(`create function usage_rolled_to(through date, rolled_to timestamptz) returns timestamptz
      language sql immutable parallel safe as $fn$
        select case when rolled_to > through::timestamp at time zone 'UTC'
                     and rolled_to < (through + 1)::timestamp at time zone 'UTC'
                    then rolled_to else through::timestamp at time zone 'UTC' end
      $fn$;`);
    this.addSql(`create or replace function usage_events_late() returns trigger language plpgsql as $fn$
declare
  e timestamptz;
begin
  select usage_rolled_to(r.through, r.rolled_to) into e from usage_rollups r where r.app_id = new.app_id for share;
  if e is not null and new.created_at < e then
    insert into usage_rollup_late (app_id, day, account_id, entitlement_id, amount)
    values (new.app_id, (new.created_at at time zone 'UTC')::date, new.account_id, new.entitlement_id, new.amount);
  end if;
  return null;
end
$fn$;`);
    this.addSql(`drop trigger usage_events_late on usage_events;`);
    this.addSql(`create trigger usage_events_late after insert on usage_events for each row
      when (new.created_at < date_trunc('hour', now() at time zone 'UTC') at time zone 'UTC')
      execute function usage_events_late();`);
  }

  override down(): void {
    this.addSql(`drop trigger usage_events_late on usage_events;`);
    this.addSql(`create or replace function usage_events_late() returns trigger language plpgsql as $fn$
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
    this.addSql(`drop function usage_rolled_to(date, timestamptz);`);
    this.addSql(`alter table "usage_rollups" drop column "rolled_to";`);
  }
}
