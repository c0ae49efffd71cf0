import { Migration } from '@mikro-orm/migrations';

/**
 * Batch ingest: the id of every ingested usage event with its outcome (so a re-sent event changes
 * nothing and answers what it answered first), and `usage_ingest`, which applies a batch in one round
 * trip by running the service's usage change statement (passed as `p_change`, the same text the
 * single-event routes run) once per event inside one transaction: in the order sent for each counter,
 * the counters taken in (account, entitlement) order so that concurrent batches lock rows in one order
 * and cannot deadlock. `idx` gives each result's place in the batch.
 */
export class Migration20261123092000_usage_ingest extends Migration {
  override name = 'Migration20261123092000_usage_ingest';

  override up(): void {
    this.addSql(`create table "usage_ingested" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "event_id" varchar(255) not null,
      "status" varchar(255) not null,
      "count" bigint null,
      "error" text null,
      "created_at" timestamptz not null default now(),
      primary key ("app_id", "event_id"));`);
    this.addSql(`create index "usage_ingested_created_at_index" on "usage_ingested" ("created_at");`);
    this.addSql(`create function usage_ingest(p_app text, p_events jsonb, p_change text)
  returns table (idx int, event_id text, status text, count bigint, error text, duplicate boolean, events text[])
  language plpgsql as $fn$
declare
  e record;
  r record;
  n int;
begin
  for e in
    select x.value ->> 'id' as id, x.value ->> 'account' as account, x.value ->> 'entitlement' as entitlement,
           (x.value ->> 'amount')::bigint as amount, (x.value ->> 'timestamp')::timestamptz as ts, x.i::int as i
    from jsonb_array_elements(p_events) with ordinality as x(value, i)
    order by x.value ->> 'account', x.value ->> 'entitlement', x.i
  loop
    insert into usage_ingested as u (app_id, event_id, status) values (p_app, e.id, 'pending')
      on conflict on constraint usage_ingested_pkey do nothing;
    get diagnostics n = row_count;
    if n = 0 then
      return query select e.i, u.event_id::text, u.status::text, u.count, u.error, true, '{}'::text[]
        from usage_ingested u where u.app_id = p_app and u.event_id = e.id;
      continue;
    end if;
    execute p_change into r using p_app, e.account, e.entitlement, e.amount,
      'evt_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20),
      'evt_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20),
      null::bytea, null::bytea, e.ts;
    idx := e.i; event_id := e.id; duplicate := false; events := '{}'; count := null; error := null;
    if not r.account_exists then
      status := 'error'; error := format('Account %s not found', e.account);
    elsif r.type is null then
      status := 'error'; error := format('Entitlement %s not found', e.entitlement);
    elsif r.type = 'boolean' then
      status := 'error'; error := format('Entitlement %s is a boolean entitlement; it has no usage counter', e.entitlement);
    elsif r.count is null then
      status := 'blocked';
      select coalesce(c.count + c.held, 0) into count from usage_counters c
        where c.app_id = p_app and c.account_id = e.account and c.entitlement_id = e.entitlement;
      error := format('Limit reached: %s of %s used', coalesce(count, 0),
        case when r.entitled then coalesce(r.max::text, 'unlimited') else '0' end);
    else
      status := 'applied'; count := r.count; events := r.events;
    end if;
    update usage_ingested u set status = usage_ingest.status, count = usage_ingest.count, error = usage_ingest.error
      where u.app_id = p_app and u.event_id = e.id;
    return next;
  end loop;
end
$fn$;`);
  }

  override down(): void {
    this.addSql(`drop function if exists usage_ingest(text, jsonb, text);`);
    this.addSql(`drop table if exists "usage_ingested";`);
  }
}
