import { Migration } from '@mikro-orm/migrations';

/**
 * Batch ingest, set-based: `usage_ingest_batch` replaces `usage_ingest` (which ran the single-event
 * change statement once per event, planning it again each time). One call, a fixed number of
 * statements whatever the batch size:
 *
 * 1. the ids already ingested (a re-sent id is a duplicate, and so is a repeat within the batch);
 * 2. the limit of every (account, entitlement) pair, by `p_limits` (the service's set-based form of the
 *    single-event statement's limit resolution, run once per batch);
 * 3. lock the counters of those pairs in (account, entitlement) order, creating missing rows (so two
 *    batches lock in one order and cannot deadlock, and a concurrent add waits for the batch);
 * 4. walk the events of each counter in the order sent with plain variables: the same rules as the
 *    single-event statement (blocking limit against count + held, counters stopping at 0 with the
 *    applied amount recorded, a negative amount on no counter changes nothing, thresholds at 80% and
 *    100% when an enabled endpoint subscribes);
 * 5. write counters, history, threshold events and the ids with their outcomes, one statement each.
 *    An id another batch recorded since step 1 (the same batch sent twice at once) makes this one fail
 *    with a serialization failure (40001) and roll back; the service runs it again, and then it is a
 *    duplicate.
 *
 * Every lookup is by primary key (lateral joins, upserts), so the plans do not depend on statistics (a
 * new app's tables have none). Results come back in the order sent (`idx`); a duplicate answers its
 * first result.
 */
export class Migration20261124090000_usage_ingest_sets extends Migration {
  override name = 'Migration20261124090000_usage_ingest_sets';

  override up(): void {
    this.addSql(`drop function if exists usage_ingest(text, jsonb, text);`);
    this.addSql(`create function usage_ingest_batch(
  p_app text, p_ids text[], p_accounts text[], p_ents text[], p_amounts bigint[], p_ts timestamptz[], p_limits text)
  returns table (idx int, event_id text, status text, count bigint, error text, duplicate boolean, events text[])
  language plpgsql as $fn$
#variable_conflict use_column
declare
  n int := coalesce(array_length(p_ids, 1), 0);
  todo int[];
  seen_id text[]; seen_status text[]; seen_count bigint[]; seen_error text[];
  recorded int;
  -- limits per pair (step 2)
  l_acc text[]; l_ent text[]; l_exists boolean[]; l_type text[]; l_name text[]; l_mode text[];
  l_entitled boolean[]; l_max bigint[];
  -- locked counters (step 3)
  c_acc text[]; c_ent text[]; c_count bigint[]; c_held bigint[]; c_new boolean[]; c_created text[];
  -- outcomes by position in the batch
  o_status text[] := array_fill(null::text, array[n]);
  o_count bigint[] := array_fill(null::bigint, array[n]);
  o_error text[] := array_fill(null::text, array[n]);
  o_ev1 text[] := array_fill(null::text, array[n]);
  o_ev2 text[] := array_fill(null::text, array[n]);
  -- counters to write: final count of touched ones, rows created by step 3 that no event created
  w_acc text[] := '{}'; w_ent text[] := '{}'; w_count bigint[] := '{}';
  d_acc text[] := '{}'; d_ent text[] := '{}';
  -- history rows
  h_acc text[] := '{}'; h_ent text[] := '{}'; h_amount bigint[] := '{}'; h_count bigint[] := '{}';
  h_ts timestamptz[] := '{}';
  -- threshold events
  e_id text[] := '{}'; e_type text[] := '{}'; e_acc text[] := '{}'; e_ent text[] := '{}'; e_name text[] := '{}';
  e_usage bigint[] := '{}'; e_max bigint[] := '{}';
  sub_warning boolean; sub_reached boolean;
  r record;
  g_acc text; g_ent text; g_started boolean := false;
  cur bigint; held bigint; has_row boolean; created boolean; touched boolean; was_new boolean; valid boolean;
  prev bigint; applied bigint; ev text; k int;
begin
  -- 1. Ids recorded before; to process: the first position of each other id.
  select coalesce(array_agg(u.event_id::text), '{}'), coalesce(array_agg(u.status::text), '{}'),
         coalesce(array_agg(u.count), '{}'), coalesce(array_agg(u.error), '{}')
    into seen_id, seen_status, seen_count, seen_error
    from usage_ingested u where u.app_id = p_app and u.event_id = any(p_ids);
  select coalesce(array_agg(f.i order by f.i), '{}') into todo
    from (select distinct on (u.id) u.id, u.i::int as i from unnest(p_ids) with ordinality as u(id, i)
           order by u.id, u.i) f
   where not (f.id = any(seen_id));

  if array_length(todo, 1) is not null then
    -- 2. Limits of the distinct pairs.
    execute p_limits
      into l_acc, l_ent, l_exists, l_type, l_name, l_mode, l_entitled, l_max
      using p_app,
        (select array_agg(p.a order by p.a, p.e) from (select distinct p_accounts[i] as a, p_ents[i] as e
           from unnest(todo) as i) p),
        (select array_agg(p.e order by p.a, p.e) from (select distinct p_accounts[i] as a, p_ents[i] as e
           from unnest(todo) as i) p);

    -- 3. Create the missing counters, then lock every counter of the pairs that can count, both in
    --    (account, entitlement) order. Locking with FOR UPDATE rather than a no-op upsert keeps the rows'
    --    versions, so the final write does not re-check their foreign keys.
    with v as (
      select l.a, l.e from unnest(l_acc, l_ent, l_exists, l_type) as l(a, e, ex, ty) where l.ex and l.ty = 'usage'
    ),
    ins as (
      insert into usage_counters as c (app_id, account_id, entitlement_id, count, updated_at)
      select p_app, v.a, v.e, 0, now() from v order by v.a, v.e
      on conflict (app_id, account_id, entitlement_id) do nothing
      returning c.account_id, c.entitlement_id
    )
    select coalesce(array_agg(ins.account_id || ' ' || ins.entitlement_id), '{}') into c_created from ins;
    select array_agg(c.account_id), array_agg(c.entitlement_id), array_agg(c.count), array_agg(c.held),
           array_agg((c.account_id || ' ' || c.entitlement_id) = any(c_created))
      into c_acc, c_ent, c_count, c_held, c_new
      from (select l.a, l.e from unnest(l_acc, l_ent, l_exists, l_type) as l(a, e, ex, ty)
             where l.ex and l.ty = 'usage' order by l.a, l.e) v
      cross join lateral (
        select c.account_id, c.entitlement_id, c.count, c.held from usage_counters c
         where c.app_id = p_app and c.account_id = v.a and c.entitlement_id = v.e for update) c;

    -- 4. Walk each counter's events in the order sent.
    for r in
      select e.i::int as i, e.account, e.ent, e.amount, e.ts, l.ex, l.ty, l.nm, l.mode, l.entitled, l.mx,
             c.cnt, c.hld, c.nw
        from unnest(p_accounts, p_ents, p_amounts, p_ts) with ordinality as e(account, ent, amount, ts, i)
        join unnest(todo) as t(i) on t.i = e.i
        join unnest(l_acc, l_ent, l_exists, l_type, l_name, l_mode, l_entitled, l_max)
          as l(a, en, ex, ty, nm, mode, entitled, mx) on l.a = e.account and l.en = e.ent
        left join unnest(c_acc, c_ent, c_count, c_held, c_new) as c(a, en, cnt, hld, nw)
          on c.a = e.account and c.en = e.ent
       order by e.account, e.ent, e.i
    loop
      if not g_started or r.account <> g_acc or r.ent <> g_ent then
        if g_started and valid then
          if touched then
            w_acc := w_acc || g_acc; w_ent := w_ent || g_ent; w_count := w_count || cur;
          end if;
          if was_new and not created then
            d_acc := d_acc || g_acc; d_ent := d_ent || g_ent;
          end if;
        end if;
        g_started := true; g_acc := r.account; g_ent := r.ent;
        valid := r.cnt is not null;
        was_new := coalesce(r.nw, false);
        cur := coalesce(r.cnt, 0); held := coalesce(r.hld, 0);
        has_row := valid and not was_new; created := false; touched := false;
      end if;

      if not r.ex then
        o_status[r.i] := 'error'; o_error[r.i] := format('Account %s not found', r.account);
      elsif r.ty is null then
        o_status[r.i] := 'error'; o_error[r.i] := format('Entitlement %s not found', r.ent);
      elsif r.ty = 'boolean' then
        o_status[r.i] := 'error';
        o_error[r.i] := format('Entitlement %s is a boolean entitlement; it has no usage counter', r.ent);
      elsif r.amount < 0 then
        o_status[r.i] := 'applied';
        if has_row then
          applied := greatest(cur + r.amount, 0) - cur;
          cur := cur + applied; touched := true;
          if applied <> 0 then
            h_acc := h_acc || r.account; h_ent := h_ent || r.ent; h_amount := h_amount || applied;
            h_count := h_count || cur; h_ts := h_ts || r.ts;
          end if;
        end if;
        o_count[r.i] := cur;
      elsif r.mode = 'block' and r.amount > 0
            and not (r.entitled and (r.mx is null or cur + held + r.amount <= r.mx)) then
        o_status[r.i] := 'blocked'; o_count[r.i] := cur + held;
        o_error[r.i] := format('Limit reached: %s of %s used', cur + held,
          case when r.entitled then coalesce(r.mx::text, 'unlimited') else '0' end);
      else
        prev := cur; cur := cur + r.amount;
        if not has_row then has_row := true; created := true; end if;
        touched := true;
        o_status[r.i] := 'applied'; o_count[r.i] := cur;
        if r.amount <> 0 then
          h_acc := h_acc || r.account; h_ent := h_ent || r.ent; h_amount := h_amount || r.amount;
          h_count := h_count || cur; h_ts := h_ts || r.ts;
        end if;
        if r.amount > 0 and r.entitled and r.mx > 0 then
          if prev * 100 < r.mx * 80 and cur * 100 >= r.mx * 80 then
            if sub_warning is null then
              select exists (select 1 from webhook_endpoints w where w.app_id = p_app and w.enabled
                and (w.events @> '["*"]'::jsonb or w.events @> '["usage.limit_warning"]'::jsonb)) into sub_warning;
            end if;
            if sub_warning then
              ev := 'evt_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20);
              o_ev1[r.i] := ev;
              e_id := e_id || ev; e_type := e_type || 'usage.limit_warning'::text; e_acc := e_acc || r.account;
              e_ent := e_ent || r.ent; e_name := e_name || r.nm; e_usage := e_usage || cur; e_max := e_max || r.mx;
            end if;
          end if;
          if prev < r.mx and cur >= r.mx then
            if sub_reached is null then
              select exists (select 1 from webhook_endpoints w where w.app_id = p_app and w.enabled
                and (w.events @> '["*"]'::jsonb or w.events @> '["usage.limit_reached"]'::jsonb)) into sub_reached;
            end if;
            if sub_reached then
              ev := 'evt_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20);
              o_ev2[r.i] := ev;
              e_id := e_id || ev; e_type := e_type || 'usage.limit_reached'::text; e_acc := e_acc || r.account;
              e_ent := e_ent || r.ent; e_name := e_name || r.nm; e_usage := e_usage || cur; e_max := e_max || r.mx;
            end if;
          end if;
        end if;
      end if;
    end loop;
    if g_started and valid then
      if touched then
        w_acc := w_acc || g_acc; w_ent := w_ent || g_ent; w_count := w_count || cur;
      end if;
      if was_new and not created then
        d_acc := d_acc || g_acc; d_ent := d_ent || g_ent;
      end if;
    end if;

    -- 5. Write everything, one statement each (counters through their key: every row exists, locked).
    insert into usage_counters as c (app_id, account_id, entitlement_id, count, updated_at)
    select p_app, w.a, w.e, w.cnt, now() from unnest(w_acc, w_ent, w_count) as w(a, e, cnt) order by 2, 3
    on conflict (app_id, account_id, entitlement_id) do update set count = excluded.count, updated_at = excluded.updated_at;
    for k in 1 .. coalesce(array_length(d_acc, 1), 0) loop
      delete from usage_counters c where c.app_id = p_app and c.account_id = d_acc[k] and c.entitlement_id = d_ent[k];
    end loop;
    insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
    select p_app, h.a, h.e, h.amount, h.cnt, coalesce(h.ts, now())
      from unnest(h_acc, h_ent, h_amount, h_count, h_ts) with ordinality as h(a, e, amount, cnt, ts, k) order by h.k;
    insert into events (id, app_id, type, data, created_at, fanout_pending)
    select v.id, p_app, v.type,
           jsonb_build_object('object', jsonb_build_object('account_id', v.a, 'entitlement_id', v.e,
             'entitlement_name', v.nm, 'usage', v.usage, 'max', v.mx, 'left', greatest(v.mx - v.usage, 0),
             'percent', v.usage * 100 / v.mx)),
           now(), true
      from unnest(e_id, e_type, e_acc, e_ent, e_name, e_usage, e_max) as v(id, type, a, e, nm, usage, mx);
    with ins as (
      insert into usage_ingested as t (app_id, event_id, status, count, error)
      select p_app, p_ids[i], o_status[i], o_count[i], o_error[i] from unnest(todo) as i order by p_ids[i]
      on conflict on constraint usage_ingested_pkey do nothing
      returning 1)
    select count(*) into recorded from ins;
    if recorded < array_length(todo, 1) then
      raise exception 'usage events of this batch were ingested by another request meanwhile'
        using errcode = 'serialization_failure';
    end if;
  end if;

  -- Results in the order sent: this call's outcome, else the one recorded first for the id.
  return query
    select e.i::int, e.id,
           case when f.i is not null then o_status[f.i] else sn.status end,
           case when f.i is not null then o_count[f.i] else sn.count end,
           case when f.i is not null then o_error[f.i] else sn.error end,
           f.i is null or f.i <> e.i,
           case when f.i = e.i then array_remove(array[o_ev1[e.i], o_ev2[e.i]], null) else '{}'::text[] end
      from unnest(p_ids) with ordinality as e(id, i)
      left join (select p_ids[t.i] as id, t.i from unnest(todo) as t(i)) f on f.id = e.id
      left join unnest(seen_id, seen_status, seen_count, seen_error) as sn(id, status, count, error) on sn.id = e.id
     order by e.i;
end
$fn$;`);
  }

  override down(): void {
    this.addSql(
      `drop function if exists usage_ingest_batch(text, text[], text[], text[], bigint[], timestamptz[], text);`,
    );
  }
}
