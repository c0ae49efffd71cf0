import { Migration } from '@mikro-orm/migrations';
import { Migration20261228090000_credits_holds_ingest } from './Migration20261228090000_credits_holds_ingest.js';

const OLD_SIGNATURE = 'text, text[], text[], text[], bigint[], timestamptz[], text';
const SIGNATURE = 'text, text[], text[], text[], bigint[], timestamptz[], text[], text';

/**
 * A usage limit per entity, and entities in batch ingest (issue 42 item 5).
 *
 * - `entitlements.usage_per_entity`: a usage entitlement declared `"per": "entity"` keeps one counter per entity
 *   registered under the account; the plan's limit applies to each.
 * - `usage_counters.entity_id` joins the primary key ('' the account's own counter, the only one of a per-account
 *   feature); `usage_events.entity_id` says whose counter a history row moved.
 * - `usage_reservations.counter_entity_id`: the counter a reservation holds on ('' the account's); `entity_id` stays
 *   the balance it holds credits on.
 * - `usage_ingest_batch` takes each event's entity (`p_entities`, '' or null: none) and keys its counters by
 *   (account, entitlement, entity) and its pool balances by (account, pool, entity), each entity only where the
 *   feature (its counter) or the pool (its balance) is kept per entity.
 */
export class Migration20261229090000_entity_usage_limits extends Migration {
  override name = 'Migration20261229090000_entity_usage_limits';

  override up(): void {
    this.addSql(`alter table "entitlements" add column "usage_per_entity" boolean not null default false;`);
    this.addSql(`alter table "usage_counters" add column "entity_id" varchar(255) not null default '';`);
    this.addSql(`alter table "usage_counters" drop constraint "usage_counters_pkey";`);
    this.addSql(
      `alter table "usage_counters" add primary key ("app_id", "account_id", "entitlement_id", "entity_id");`,
    );
    this.addSql(`alter table "usage_events" add column "entity_id" varchar(255) not null default '';`);
    this.addSql(`alter table "usage_reservations" add column "counter_entity_id" varchar(255) not null default '';`);
    this.addSql(`drop function if exists usage_ingest_batch(${OLD_SIGNATURE});`);
    this.addSql(INGEST_FUNCTION);
  }

  override down(): void {
    this.addSql(`drop function if exists usage_ingest_batch(${SIGNATURE});`);
    // The previous function, from the migration that wrote it.
    const previous = new Migration20261228090000_credits_holds_ingest(this.driver, this.config);
    void previous.up();
    for (const q of previous.getQueries())
      if (String(q).startsWith('create or replace function usage_ingest_batch')) this.addSql(q);
    this.addSql(`delete from usage_counters where entity_id <> '';`);
    this.addSql(`alter table "usage_reservations" drop column "counter_entity_id";`);
    this.addSql(`alter table "usage_events" drop column "entity_id";`);
    this.addSql(`alter table "usage_counters" drop constraint "usage_counters_pkey";`);
    this.addSql(`alter table "usage_counters" add primary key ("app_id", "account_id", "entitlement_id");`);
    this.addSql(`alter table "usage_counters" drop column "entity_id";`);
    this.addSql(`alter table "entitlements" drop column "usage_per_entity";`);
  }
}

/**
 * The batch ingest function of Migration20261228090000_credits_holds_ingest (read its comments), with entities:
 * `p_limits` also answers whether each feature and its pool are kept per entity; step 2b checks each event's entity
 * (`error` when a per-entity feature or pool gets none, when anything else gets one, or when it is not registered
 * under the account: the single-event call's 400s and 404) and gives each event its counter key (account,
 * entitlement, entity or '') and its balance key (account, pool, entity or ''). Counters and balances are then locked,
 * walked and written by those keys, in key order as before.
 */
const INGEST_FUNCTION = `create or replace function usage_ingest_batch(
  p_app text, p_ids text[], p_accounts text[], p_ents text[], p_amounts bigint[], p_ts timestamptz[],
  p_entities text[], p_limits text)
  returns table (idx int, event_id text, status text, count bigint, error text, duplicate boolean, events text[])
  language plpgsql set enable_seqscan = off as $fn$
#variable_conflict use_column
declare
  n int := coalesce(array_length(p_ids, 1), 0);
  todo int[];
  seen_id text[]; seen_status text[]; seen_count bigint[]; seen_error text[];
  recorded int;
  l_acc text[]; l_ent text[]; l_exists boolean[]; l_type text[]; l_name text[]; l_mode text[];
  l_entitled boolean[]; l_max bigint[]; l_pool text[]; l_cost bigint[]; l_uper boolean[]; l_pper boolean[];
  x_t1 text[]; x_t2 text[]; x_b boolean[]; x_t3 text[]; x_t4 text[]; x_t5 text[]; x_c bigint[]; x_b2 boolean[];
  x_b3 boolean[];
  -- each event's entity ('' none), its entity refusal, its counter and balance keys (by position in p_ids)
  v_y text[] := array_fill(''::text, array[n]);
  v_err text[] := array_fill(null::text, array[n]);
  v_ck text[] := array_fill(null::text, array[n]);
  v_bk text[] := array_fill(null::text, array[n]);
  v_cy text[] := array_fill(''::text, array[n]);
  v_by text[] := array_fill(''::text, array[n]);
  known text[];
  -- pool balances of the batch (by position: b_key is account, pool, entity joined by chr(31))
  b_acc text[]; b_pool text[]; b_ety text[]; b_key text[] := '{}'; b_bal bigint[]; b_held bigint[]; b_orig bigint[];
  b_name text[]; b_entitled boolean[]; b_max bigint[]; b_debit bigint[]; b_last int[]; b_feature text[];
  -- counters of the batch (by position: k_key is account, entitlement, entity joined by chr(31))
  k_acc text[]; k_ent text[]; k_ety text[]; k_key text[] := '{}';
  c_created text[];
  o_status text[] := array_fill(null::text, array[n]);
  o_count bigint[] := array_fill(null::bigint, array[n]);
  o_error text[] := array_fill(null::text, array[n]);
  o_ev1 text[] := array_fill(null::text, array[n]);
  o_ev2 text[] := array_fill(null::text, array[n]);
  o_ev3 text[] := array_fill(null::text, array[n]);
  w_acc text[] := '{}'; w_ent text[] := '{}'; w_ety text[] := '{}'; w_count bigint[] := '{}';
  d_acc text[] := '{}'; d_ent text[] := '{}'; d_ety text[] := '{}';
  h_acc text[] := '{}'; h_ent text[] := '{}'; h_ety text[] := '{}'; h_amount bigint[] := '{}'; h_count bigint[] := '{}';
  h_ts timestamptz[] := '{}';
  e_id text[] := '{}'; e_type text[] := '{}'; e_acc text[] := '{}'; e_ent text[] := '{}'; e_ety text[] := '{}';
  e_name text[] := '{}'; e_usage bigint[] := '{}'; e_max bigint[] := '{}';
  -- ledger rows and refund grants
  g_acc_l text[] := '{}'; g_pool_l text[] := '{}'; g_ety_l text[] := '{}'; g_amount_l bigint[] := '{}';
  g_kind_l text[] := '{}'; g_feat_l text[] := '{}'; g_grant_l text[] := '{}'; g_req_l text[] := '{}';
  rf_id text[] := '{}'; rf_acc text[] := '{}'; rf_pool text[] := '{}'; rf_ety text[] := '{}'; rf_ent text[] := '{}';
  rf_credits bigint[] := '{}';
  sub_warning boolean; sub_reached boolean; sub_low boolean; sub_depleted boolean;
  r record;
  -- each counter's state while walking (by its position in the k_ arrays)
  s_cur bigint[]; s_held bigint[]; s_new boolean[]; s_has_row boolean[]; s_created boolean[]; s_touched boolean[];
  cur bigint; held bigint; has_row boolean;
  prev bigint; applied bigint; ev text; k int; need bigint; gid text; ctype text;
begin
  select coalesce(array_agg(u.event_id::text), '{}'), coalesce(array_agg(u.status::text), '{}'),
         coalesce(array_agg(u.count), '{}'), coalesce(array_agg(u.error), '{}')
    into seen_id, seen_status, seen_count, seen_error
    from usage_ingested u where u.app_id = p_app and u.event_id = any(p_ids);
  select coalesce(array_agg(f.i order by f.i), '{}') into todo
    from (select distinct on (u.id) u.id, u.i::int as i from unnest(p_ids) with ordinality as u(id, i)
           order by u.id, u.i) f
   where not (f.id = any(seen_id));

  if array_length(todo, 1) is not null then
    -- 2. Limits of the distinct (account, entitlement) pairs (an entity's counter has its account's limit).
    execute p_limits
      into l_acc, l_ent, l_exists, l_type, l_name, l_mode, l_entitled, l_max, l_pool, l_cost, l_uper, l_pper
      using p_app,
        (select array_agg(p.a order by p.a, p.e) from (select distinct p_accounts[i] as a, p_ents[i] as e
           from unnest(todo) as i) p),
        (select array_agg(p.e order by p.a, p.e) from (select distinct p_accounts[i] as a, p_ents[i] as e
           from unnest(todo) as i) p);

    -- 2b. Each event's entity: the registered ones of the batch, then its refusal or its keys.
    select coalesce(array_agg(x.account_id || chr(31) || x.id), '{}') into known
      from (select distinct p_accounts[i] as a, p_entities[i] as y from unnest(todo) as i
             where coalesce(p_entities[i], '') <> '') q
      join lateral (select x.account_id, x.id from account_entities x
                     where x.app_id = p_app and x.account_id = q.a and x.id = q.y limit 1) x on true;
    for r in
      select t.i, p_accounts[t.i] as a, p_ents[t.i] as e, coalesce(p_entities[t.i], '') as y, l.ex, l.ty, l.pl,
             coalesce(l.uper, false) as uper, coalesce(l.pper, false) as pper
        from unnest(todo) as t(i)
        join unnest(l_acc, l_ent, l_exists, l_type, l_pool, l_uper, l_pper) as l(a, e, ex, ty, pl, uper, pper)
          on l.a = p_accounts[t.i] and l.e = p_ents[t.i]
    loop
      v_y[r.i] := r.y;
      continue when not r.ex or r.ty is distinct from 'usage';
      if r.y = '' and (r.uper or r.pper) then
        v_err[r.i] := format('entity: %s %s; name the entity', r.e,
          case when r.uper then 'keeps its usage per entity' else format('draws from pool %s, kept per entity', r.pl) end);
      elsif r.y <> '' and not (r.uper or r.pper) then
        v_err[r.i] := format('entity: %s is kept per account%s; it takes no entity', r.e,
          case when r.pl is not null then format(' and draws from pool %s, kept per account', r.pl) else '' end);
      elsif r.y <> '' and not ((r.a || chr(31) || r.y) = any(known)) then
        v_err[r.i] := format('Entity %s under account %s not found', r.y, r.a);
      else
        v_cy[r.i] := case when r.uper then r.y else '' end;
        v_by[r.i] := case when r.pper then r.y else '' end;
        v_ck[r.i] := r.a || chr(31) || r.e || chr(31) || v_cy[r.i];
        if r.pl is not null then v_bk[r.i] := r.a || chr(31) || r.pl || chr(31) || v_by[r.i]; end if;
      end if;
    end loop;

    select array_agg(p.a order by p.a, p.pl, p.y), array_agg(p.pl order by p.a, p.pl, p.y),
           array_agg(p.y order by p.a, p.pl, p.y)
      into b_acc, b_pool, b_ety
      from (select distinct p_accounts[i] as a, l.pl, v_by[i] as y from unnest(todo) as i
              join unnest(l_acc, l_ent, l_pool) as l(a, e, pl) on l.a = p_accounts[i] and l.e = p_ents[i]
             where v_bk[i] is not null) p;

    if b_acc is not null then
      execute p_limits
        into x_t1, x_t2, x_b, x_t3, b_name, x_t4, b_entitled, b_max, x_t5, x_c, x_b2, x_b3
        using p_app, b_acc, b_pool;
      -- 3a. A refund needs its balance row; then lock every balance of the batch, in (account, pool, entity) order.
      insert into credit_balances as b (app_id, account_id, pool_id, entity_id, balance, updated_at)
      select distinct p_app, p_accounts[t.i], l.pl, v_by[t.i], 0::bigint, now()
        from unnest(todo) as t(i)
        join unnest(l_acc, l_ent, l_pool) as l(a, e, pl) on l.a = p_accounts[t.i] and l.e = p_ents[t.i]
       where v_bk[t.i] is not null and p_amounts[t.i] < 0
       order by 2, 3, 4
      on conflict (app_id, account_id, pool_id, entity_id) do nothing;
      select array_agg(v.a || chr(31) || v.pl || chr(31) || v.y order by v.k), array_agg(b.balance order by v.k),
             array_agg(b.held order by v.k)
        into b_key, b_bal, b_held
        from unnest(b_acc, b_pool, b_ety) with ordinality as v(a, pl, y, k)
        left join lateral (
          select b.balance, b.held from credit_balances b
           where b.app_id = p_app and b.account_id = v.a and b.pool_id = v.pl and b.entity_id = v.y for update) b
          on true;
      b_orig := b_bal;
      b_debit := array_fill(0::bigint, array[array_length(b_key, 1)]);
      b_last := array_fill(null::int, array[array_length(b_key, 1)]);
      b_feature := array_fill(null::text, array[array_length(b_key, 1)]);
    end if;

    -- 3b. The counters of the events that passed 2b, in (account, entitlement, entity) order.
    select coalesce(array_agg(p.a order by p.a, p.e, p.y), '{}'), coalesce(array_agg(p.e order by p.a, p.e, p.y), '{}'),
           coalesce(array_agg(p.y order by p.a, p.e, p.y), '{}'),
           coalesce(array_agg(p.a || chr(31) || p.e || chr(31) || p.y order by p.a, p.e, p.y), '{}')
      into k_acc, k_ent, k_ety, k_key
      from (select distinct p_accounts[i] as a, p_ents[i] as e, v_cy[i] as y from unnest(todo) as i
             where v_ck[i] is not null) p;
    with ins as (
      insert into usage_counters as c (app_id, account_id, entitlement_id, entity_id, count, updated_at)
      select p_app, v.a, v.e, v.y, 0, now() from unnest(k_acc, k_ent, k_ety) as v(a, e, y) order by v.a, v.e, v.y
      on conflict (app_id, account_id, entitlement_id, entity_id) do nothing
      returning c.account_id, c.entitlement_id, c.entity_id
    )
    select coalesce(array_agg(ins.account_id || chr(31) || ins.entitlement_id || chr(31) || ins.entity_id), '{}')
      into c_created from ins;
    select array_agg(c.count order by v.k), array_agg(c.held order by v.k), array_agg(v.key = any(c_created) order by v.k)
      into s_cur, s_held, s_new
      from unnest(k_acc, k_ent, k_ety, k_key) with ordinality as v(a, e, y, key, k)
      left join lateral (
        select c.count, c.held from usage_counters c
         where c.app_id = p_app and c.account_id = v.a and c.entitlement_id = v.e and c.entity_id = v.y for update) c
        on true;

    -- 4. Walk the events in the order sent, each counter's state kept by its position (k) between its events.
    if array_length(k_key, 1) is not null then
      s_has_row := array_fill(false, array[array_length(k_key, 1)]);
      s_created := s_has_row; s_touched := s_has_row;
      for k in 1 .. array_length(k_key, 1) loop
        s_has_row[k] := s_cur[k] is not null and not s_new[k];
      end loop;
    end if;
    for r in
      select e.i::int as i, e.id, e.account, e.ent, e.amount, e.ts, l.ex, l.ty, l.nm, l.mode, l.entitled, l.mx,
             l.pl, l.cost, c.k::int as k, b.bi::int as bi, v_err[e.i] as err, v_cy[e.i] as cety, v_by[e.i] as bety
        from unnest(p_ids, p_accounts, p_ents, p_amounts, p_ts) with ordinality as e(id, account, ent, amount, ts, i)
        join unnest(todo) as t(i) on t.i = e.i
        join unnest(l_acc, l_ent, l_exists, l_type, l_name, l_mode, l_entitled, l_max, l_pool, l_cost)
          as l(a, en, ex, ty, nm, mode, entitled, mx, pl, cost) on l.a = e.account and l.en = e.ent
        left join unnest(k_key) with ordinality as c(key, k) on c.key = v_ck[e.i]
        left join unnest(b_key) with ordinality as b(key, bi) on b.key = v_bk[e.i]
       order by e.i
    loop
      if r.k is not null then
        cur := coalesce(s_cur[r.k], 0); held := coalesce(s_held[r.k], 0); has_row := s_has_row[r.k];
      end if;

      if not r.ex then
        o_status[r.i] := 'error'; o_error[r.i] := format('Account %s not found', r.account);
      elsif r.ty is null then
        o_status[r.i] := 'error'; o_error[r.i] := format('Entitlement %s not found', r.ent);
      elsif r.ty = 'boolean' then
        o_status[r.i] := 'error';
        o_error[r.i] := format('Entitlement %s is a boolean entitlement; it has no usage counter', r.ent);
      elsif r.ty = 'credits' then
        o_status[r.i] := 'error';
        o_error[r.i] := format('Entitlement %s is a credits pool; usage entitlements draw from it', r.ent);
      elsif r.err is not null then
        o_status[r.i] := 'error'; o_error[r.i] := r.err;
      elsif r.amount < 0 then
        o_status[r.i] := 'applied';
        if has_row then
          applied := greatest(cur + r.amount, 0) - cur;
          cur := cur + applied; s_touched[r.k] := true;
          if applied <> 0 then
            h_acc := h_acc || r.account; h_ent := h_ent || r.ent; h_ety := h_ety || r.cety;
            h_amount := h_amount || applied; h_count := h_count || cur; h_ts := h_ts || r.ts;
            -- A drawing feature gives back what it took, as a refund grant that does not expire.
            if r.bi is not null and not (b_entitled[r.bi] and b_max[r.bi] is null) then
              need := -applied * r.cost;
              gid := 'grt_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20);
              b_bal[r.bi] := b_bal[r.bi] + need;
              rf_id := rf_id || gid; rf_acc := rf_acc || r.account; rf_pool := rf_pool || r.pl;
              rf_ety := rf_ety || r.bety; rf_ent := rf_ent || r.ent; rf_credits := rf_credits || need;
              g_acc_l := g_acc_l || r.account; g_pool_l := g_pool_l || r.pl; g_ety_l := g_ety_l || r.bety;
              g_amount_l := g_amount_l || need; g_kind_l := g_kind_l || 'refund'::text;
              g_feat_l := g_feat_l || r.ent; g_grant_l := g_grant_l || gid; g_req_l := g_req_l || r.id;
            end if;
          end if;
        end if;
        o_count[r.i] := cur;
      elsif r.mode = 'block' and r.amount > 0
            and not (r.entitled and (r.mx is null or cur + held + r.amount <= r.mx)) then
        o_status[r.i] := 'blocked'; o_count[r.i] := cur + held;
        o_error[r.i] := format('Limit reached: %s of %s used%s', cur + held,
          case when r.entitled then coalesce(r.mx::text, 'unlimited') else '0' end,
          case when r.cety <> '' then format(' by entity %s', r.cety) else '' end);
      elsif r.bi is not null and r.amount > 0 and not (b_entitled[r.bi] and b_max[r.bi] is null)
            and coalesce(b_bal[r.bi] - b_held[r.bi], 0) < r.amount * r.cost then
        -- The pool cannot cover the draw: neither moves (the single-event path's 402).
        o_status[r.i] := 'blocked'; o_count[r.i] := cur;
        o_error[r.i] := format('Credits exhausted: %s %s needed, %s left%s', r.amount * r.cost, r.pl,
          greatest(coalesce(b_bal[r.bi] - b_held[r.bi], 0), 0),
          case when r.bety <> '' then format(' to entity %s', r.bety) else '' end);
      else
        prev := cur; cur := cur + r.amount;
        if not has_row then s_has_row[r.k] := true; s_created[r.k] := true; end if;
        s_touched[r.k] := true;
        o_status[r.i] := 'applied'; o_count[r.i] := cur;
        if r.amount <> 0 then
          h_acc := h_acc || r.account; h_ent := h_ent || r.ent; h_ety := h_ety || r.cety;
          h_amount := h_amount || r.amount; h_count := h_count || cur; h_ts := h_ts || r.ts;
        end if;
        if r.bi is not null and r.amount > 0 and not (b_entitled[r.bi] and b_max[r.bi] is null) then
          need := r.amount * r.cost;
          b_bal[r.bi] := b_bal[r.bi] - need; b_debit[r.bi] := b_debit[r.bi] + need;
          b_last[r.bi] := r.i; b_feature[r.bi] := r.ent;
          g_acc_l := g_acc_l || r.account; g_pool_l := g_pool_l || r.pl; g_ety_l := g_ety_l || r.bety;
          g_amount_l := g_amount_l || -need; g_kind_l := g_kind_l || 'debit'::text; g_feat_l := g_feat_l || r.ent;
          g_grant_l := g_grant_l || null::text; g_req_l := g_req_l || r.id;
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
              e_ent := e_ent || r.ent; e_ety := e_ety || r.cety; e_name := e_name || r.nm; e_usage := e_usage || cur;
              e_max := e_max || r.mx;
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
              e_ent := e_ent || r.ent; e_ety := e_ety || r.cety; e_name := e_name || r.nm; e_usage := e_usage || cur;
              e_max := e_max || r.mx;
            end if;
          end if;
        end if;
      end if;
      if r.k is not null and s_cur[r.k] is not null then s_cur[r.k] := cur; end if;
    end loop;
    -- Counters to write (the touched ones), rows step 3 created that no event used (to delete).
    for k in 1 .. coalesce(array_length(k_key, 1), 0) loop
      continue when s_cur[k] is null;
      if s_touched[k] then
        w_acc := w_acc || k_acc[k]; w_ent := w_ent || k_ent[k]; w_ety := w_ety || k_ety[k];
        w_count := w_count || s_cur[k];
      end if;
      if s_new[k] and not s_created[k] then
        d_acc := d_acc || k_acc[k]; d_ent := d_ent || k_ent[k]; d_ety := d_ety || k_ety[k];
      end if;
    end loop;

    -- 5. Write everything, one statement each; the balances first (their rows are locked).
    update credit_balances b set balance = v.bal, unallocated = b.unallocated + v.debit, updated_at = now()
      from unnest(b_acc, b_pool, b_ety, b_bal, b_orig, b_debit) as v(a, pl, y, bal, orig, debit)
     where v.bal is not null and (v.bal <> v.orig or v.debit <> 0)
       and b.app_id = p_app and b.account_id = v.a and b.pool_id = v.pl and b.entity_id = v.y;
    insert into credit_grants (id, app_id, account_id, pool_id, entity_id, amount, remaining, source, source_ref,
      created_at)
    select v.id, p_app, v.a, v.pl, v.y, v.credits, v.credits, 'refund', v.e, now()
      from unnest(rf_id, rf_acc, rf_pool, rf_ety, rf_ent, rf_credits) as v(id, a, pl, y, e, credits);
    insert into credit_ledger (app_id, account_id, pool_id, entity_id, grant_id, amount, kind, feature, request_id,
      created_at)
    select p_app, v.a, v.pl, v.y, v.gid, v.amount, v.kind, v.feat, v.req, now()
      from unnest(g_acc_l, g_pool_l, g_ety_l, g_amount_l, g_kind_l, g_feat_l, g_grant_l, g_req_l)
        with ordinality as v(a, pl, y, amount, kind, feat, gid, req, k)
     order by v.k;
    -- credits.low / credits.depleted: a balance this batch drew from, by its value before and after the batch.
    for k in 1 .. coalesce(array_length(b_key, 1), 0) loop
      continue when b_last[k] is null or b_bal[k] >= b_orig[k];
      ctype := case when b_bal[k] = 0 then 'credits.depleted'
                    when b_max[k] > 0 and b_orig[k] * 10 >= b_max[k] and b_bal[k] * 10 < b_max[k] then 'credits.low'
               end;
      continue when ctype is null;
      if ctype = 'credits.depleted' and sub_depleted is null or ctype = 'credits.low' and sub_low is null then
        if ctype = 'credits.depleted' then
          select exists (select 1 from webhook_endpoints w where w.app_id = p_app and w.enabled
            and (w.events @> '["*"]'::jsonb or w.events @> '["credits.depleted"]'::jsonb)) into sub_depleted;
        else
          select exists (select 1 from webhook_endpoints w where w.app_id = p_app and w.enabled
            and (w.events @> '["*"]'::jsonb or w.events @> '["credits.low"]'::jsonb)) into sub_low;
        end if;
      end if;
      continue when not (case when ctype = 'credits.depleted' then sub_depleted else sub_low end);
      ev := 'evt_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20);
      o_ev3[b_last[k]] := ev;
      insert into events (id, app_id, type, data, created_at, fanout_pending)
      values (ev, p_app, ctype, jsonb_build_object('object', jsonb_build_object('account_id', b_acc[k],
        'entity', nullif(b_ety[k], ''), 'pool', b_pool[k], 'pool_name', b_name[k], 'balance', b_bal[k],
        'previous_balance', b_orig[k], 'granted_per_period', case when b_entitled[k] then b_max[k] end,
        'feature', b_feature[k])), now(), true);
    end loop;

    insert into usage_counters as c (app_id, account_id, entitlement_id, entity_id, count, updated_at)
    select p_app, w.a, w.e, w.y, w.cnt, now() from unnest(w_acc, w_ent, w_ety, w_count) as w(a, e, y, cnt)
     order by 2, 3, 4
    on conflict (app_id, account_id, entitlement_id, entity_id) do update
      set count = excluded.count, updated_at = excluded.updated_at;
    for k in 1 .. coalesce(array_length(d_acc, 1), 0) loop
      delete from usage_counters c where c.app_id = p_app and c.account_id = d_acc[k] and c.entitlement_id = d_ent[k]
        and c.entity_id = d_ety[k];
    end loop;
    insert into usage_events (app_id, account_id, entitlement_id, entity_id, amount, count, created_at)
    select p_app, h.a, h.e, h.y, h.amount, h.cnt, coalesce(h.ts, now())
      from unnest(h_acc, h_ent, h_ety, h_amount, h_count, h_ts) with ordinality as h(a, e, y, amount, cnt, ts, k)
     order by h.k;
    insert into events (id, app_id, type, data, created_at, fanout_pending)
    select v.id, p_app, v.type,
           jsonb_build_object('object', jsonb_build_object('account_id', v.a, 'entitlement_id', v.e,
             'entitlement_name', v.nm, 'entity', nullif(v.y, ''), 'usage', v.usage, 'max', v.mx,
             'left', greatest(v.mx - v.usage, 0), 'percent', v.usage * 100 / v.mx)),
           now(), true
      from unnest(e_id, e_type, e_acc, e_ent, e_ety, e_name, e_usage, e_max) as v(id, type, a, e, y, nm, usage, mx);
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

  return query
    select e.i::int, e.id,
           case when f.i is not null then o_status[f.i] else sn.status end,
           case when f.i is not null then o_count[f.i] else sn.count end,
           case when f.i is not null then o_error[f.i] else sn.error end,
           f.i is null or f.i <> e.i,
           case when f.i = e.i then array_remove(array[o_ev1[e.i], o_ev2[e.i], o_ev3[e.i]], null)
                else '{}'::text[] end
      from unnest(p_ids) with ordinality as e(id, i)
      left join (select p_ids[t.i] as id, t.i from unnest(todo) as t(i)) f on f.id = e.id
      left join unnest(seen_id, seen_status, seen_count, seen_error) as sn(id, status, count, error) on sn.id = e.id
     order by e.i;
end
$fn$;`;
