import { Migration } from '@mikro-orm/migrations';
import { Migration20261124090000_usage_ingest_sets } from './Migration20261124090000_usage_ingest_sets.js';

const SIGNATURE = 'text, text[], text[], text[], bigint[], timestamptz[], text';

/**
 * Credits in reservations and batch ingest (issue 42 item 1).
 *
 * - `credit_balances.held`: credits held by open reservations of drawing features (`amount × cost` each). A draw
 *   needs `balance - held >= need`; a hold is not a ledger movement (the balance stays the ledger's sum); a commit
 *   debits what it commits and frees its hold, a release or an expiry frees it. A grant's expiry is not stopped by
 *   holds, so `held` may exceed `balance` for a while (then nothing more is drawn until the holds settle;
 *   docs/decisions, "Credits": a hold guards credits against other draws, not against expiry).
 * - `usage_reservations.credit_pool_id` and `credit_cost`: what a reservation holds, at the cost of its reserve (null
 *   when it holds nothing: a feature that draws nothing, or an unlimited pool).
 * - `usage_ingest_batch` draws credits: `p_limits` answers each entitlement's pool and cost too, the batch's pool
 *   balances are locked (in (account, pool) order, before the counters, the order the single-event statement takes
 *   them in) and walked with the counters, and debits, refund grants and ledger rows are written by the same call.
 */
export class Migration20261228090000_credits_holds_ingest extends Migration {
  override name = 'Migration20261228090000_credits_holds_ingest';

  override up(): void {
    this.addSql(`alter table "credit_balances" add column "held" bigint not null default 0 check ("held" >= 0);`);
    this.addSql(`alter table "usage_reservations"
      add column "credit_pool_id" varchar(255) null,
      add column "credit_cost" bigint null check ("credit_cost" >= 1);`);
    this.addSql(INGEST_FUNCTION);
  }

  override down(): void {
    this.addSql(`alter table "usage_reservations" drop column "credit_pool_id", drop column "credit_cost";`);
    this.addSql(`alter table "credit_balances" drop column "held";`);
    // The function as the earlier migrations left it (its `p_limits` reads eight columns, as the service before this
    // one sends): its text from the migration that wrote it, then its planner setting.
    const previous = new Migration20261124090000_usage_ingest_sets(this.driver, this.config);
    void previous.up();
    this.addSql(`drop function if exists usage_ingest_batch(${SIGNATURE});`);
    for (const q of previous.getQueries())
      if (String(q).startsWith('create function usage_ingest_batch')) this.addSql(q);
    this.addSql(`alter function usage_ingest_batch(${SIGNATURE}) set enable_seqscan = off;`);
  }
}

/**
 * The batch ingest function of Migration20261124090000_usage_ingest_sets (read its comment: steps 1 to 5), with
 * credits: step 2 also resolves each drawing pair's pool (the pool's own limit: unlimited, or the credits granted per
 * period for `credits.low`), step 3 locks the pools' balance rows before the counters (creating one only where a
 * refund needs it), step 4 walks the events in the order sent (before: counter by counter; each counter's state is now
 * kept in arrays, so events of several features drawing from one pool meet it in the order sent) and each event
 * against its pool too (a positive amount needs `balance - held >= amount
 * × cost`, else the event is `blocked` and neither moves; a negative one refunds what it took off the counter, times
 * the cost, as a `refund` grant), and step 5 writes balances, refund grants, ledger rows (`request_id`: the event id)
 * and `credits.low` / `credits.depleted` (once per balance and batch, by its balance before and after the batch).
 * Sequential scans stay off (Migration20261128090000_usage_ingest_by_key).
 */
const INGEST_FUNCTION = `create or replace function usage_ingest_batch(
  p_app text, p_ids text[], p_accounts text[], p_ents text[], p_amounts bigint[], p_ts timestamptz[], p_limits text)
  returns table (idx int, event_id text, status text, count bigint, error text, duplicate boolean, events text[])
  language plpgsql set enable_seqscan = off as $fn$
#variable_conflict use_column
declare
  n int := coalesce(array_length(p_ids, 1), 0);
  todo int[];
  seen_id text[]; seen_status text[]; seen_count bigint[]; seen_error text[];
  recorded int;
  l_acc text[]; l_ent text[]; l_exists boolean[]; l_type text[]; l_name text[]; l_mode text[];
  l_entitled boolean[]; l_max bigint[]; l_pool text[]; l_cost bigint[];
  x_t1 text[]; x_t2 text[]; x_b boolean[]; x_t3 text[]; x_t4 text[]; x_t5 text[]; x_c bigint[];
  -- pool balances of the batch (by position: b_key is account || chr(31) || pool)
  b_acc text[]; b_pool text[]; b_key text[] := '{}'; b_bal bigint[]; b_held bigint[]; b_orig bigint[];
  b_name text[]; b_entitled boolean[]; b_max bigint[]; b_debit bigint[]; b_last int[]; b_feature text[];
  c_acc text[]; c_ent text[]; c_count bigint[]; c_held bigint[]; c_new boolean[]; c_created text[];
  o_status text[] := array_fill(null::text, array[n]);
  o_count bigint[] := array_fill(null::bigint, array[n]);
  o_error text[] := array_fill(null::text, array[n]);
  o_ev1 text[] := array_fill(null::text, array[n]);
  o_ev2 text[] := array_fill(null::text, array[n]);
  o_ev3 text[] := array_fill(null::text, array[n]);
  w_acc text[] := '{}'; w_ent text[] := '{}'; w_count bigint[] := '{}';
  d_acc text[] := '{}'; d_ent text[] := '{}';
  h_acc text[] := '{}'; h_ent text[] := '{}'; h_amount bigint[] := '{}'; h_count bigint[] := '{}';
  h_ts timestamptz[] := '{}';
  e_id text[] := '{}'; e_type text[] := '{}'; e_acc text[] := '{}'; e_ent text[] := '{}'; e_name text[] := '{}';
  e_usage bigint[] := '{}'; e_max bigint[] := '{}';
  -- ledger rows and refund grants
  g_acc_l text[] := '{}'; g_pool_l text[] := '{}'; g_amount_l bigint[] := '{}'; g_kind_l text[] := '{}';
  g_feat_l text[] := '{}'; g_grant_l text[] := '{}'; g_req_l text[] := '{}';
  rf_id text[] := '{}'; rf_acc text[] := '{}'; rf_pool text[] := '{}'; rf_ent text[] := '{}';
  rf_credits bigint[] := '{}';
  sub_warning boolean; sub_reached boolean; sub_low boolean; sub_depleted boolean;
  r record;
  -- each counter's state while walking (by its pair's position in the l_ arrays)
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
    -- 2. Limits of the distinct pairs, then of the pools they draw from.
    execute p_limits
      into l_acc, l_ent, l_exists, l_type, l_name, l_mode, l_entitled, l_max, l_pool, l_cost
      using p_app,
        (select array_agg(p.a order by p.a, p.e) from (select distinct p_accounts[i] as a, p_ents[i] as e
           from unnest(todo) as i) p),
        (select array_agg(p.e order by p.a, p.e) from (select distinct p_accounts[i] as a, p_ents[i] as e
           from unnest(todo) as i) p);
    select array_agg(p.a order by p.a, p.pl), array_agg(p.pl order by p.a, p.pl)
      into b_acc, b_pool
      from (select distinct l.a, l.pl from unnest(l_acc, l_exists, l_type, l_pool) as l(a, ex, ty, pl)
             where l.ex and l.ty = 'usage' and l.pl is not null) p;

    if b_acc is not null then
      execute p_limits
        into x_t1, x_t2, x_b, x_t3, b_name, x_t4, b_entitled, b_max, x_t5, x_c
        using p_app, b_acc, b_pool;
      -- 3a. A refund needs its balance row; then lock every balance of the batch, in (account, pool) order.
      insert into credit_balances as b (app_id, account_id, pool_id, entity_id, balance, updated_at)
      select distinct p_app, p_accounts[t.i], l.pl, '', 0::bigint, now()
        from unnest(todo) as t(i)
        join unnest(l_acc, l_ent, l_exists, l_type, l_pool) as l(a, e, ex, ty, pl)
          on l.a = p_accounts[t.i] and l.e = p_ents[t.i]
       where l.ex and l.ty = 'usage' and l.pl is not null and p_amounts[t.i] < 0
       order by 2, 3
      on conflict (app_id, account_id, pool_id, entity_id) do nothing;
      select array_agg(v.a || chr(31) || v.pl order by v.k), array_agg(b.balance order by v.k),
             array_agg(b.held order by v.k)
        into b_key, b_bal, b_held
        from unnest(b_acc, b_pool) with ordinality as v(a, pl, k)
        left join lateral (
          select b.balance, b.held from credit_balances b
           where b.app_id = p_app and b.account_id = v.a and b.pool_id = v.pl and b.entity_id = '' for update) b
          on true;
      b_orig := b_bal;
      b_debit := array_fill(0::bigint, array[array_length(b_key, 1)]);
      b_last := array_fill(null::int, array[array_length(b_key, 1)]);
      b_feature := array_fill(null::text, array[array_length(b_key, 1)]);
    end if;

    -- 3b. The counters, as before.
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

    -- 4. Walk the events in the order sent (so events drawing from one pool meet it in that order too), each
    --    counter's state kept by its pair's position (k) between its events.
    select array_agg(c.cnt order by l.k), array_agg(c.hld order by l.k), array_agg(coalesce(c.nw, false) order by l.k)
      into s_cur, s_held, s_new
      from unnest(l_acc, l_ent) with ordinality as l(a, en, k)
      left join unnest(c_acc, c_ent, c_count, c_held, c_new) as c(a, en, cnt, hld, nw) on c.a = l.a and c.en = l.en;
    s_has_row := array_fill(false, array[array_length(l_acc, 1)]);
    s_created := s_has_row; s_touched := s_has_row;
    for k in 1 .. array_length(l_acc, 1) loop
      s_has_row[k] := s_cur[k] is not null and not s_new[k];
    end loop;
    for r in
      select e.i::int as i, e.id, e.account, e.ent, e.amount, e.ts, l.ex, l.ty, l.nm, l.mode, l.entitled, l.mx,
             l.pl, l.cost, l.k::int as k, b.bi::int as bi
        from unnest(p_ids, p_accounts, p_ents, p_amounts, p_ts) with ordinality as e(id, account, ent, amount, ts, i)
        join unnest(todo) as t(i) on t.i = e.i
        join unnest(l_acc, l_ent, l_exists, l_type, l_name, l_mode, l_entitled, l_max, l_pool, l_cost)
          with ordinality as l(a, en, ex, ty, nm, mode, entitled, mx, pl, cost, k) on l.a = e.account and l.en = e.ent
        left join unnest(b_key) with ordinality as b(key, bi) on b.key = e.account || chr(31) || l.pl
       order by e.i
    loop
      cur := coalesce(s_cur[r.k], 0); held := coalesce(s_held[r.k], 0); has_row := s_has_row[r.k];

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
      elsif r.amount < 0 then
        o_status[r.i] := 'applied';
        if has_row then
          applied := greatest(cur + r.amount, 0) - cur;
          cur := cur + applied; s_touched[r.k] := true;
          if applied <> 0 then
            h_acc := h_acc || r.account; h_ent := h_ent || r.ent; h_amount := h_amount || applied;
            h_count := h_count || cur; h_ts := h_ts || r.ts;
            -- A drawing feature gives back what it took, as a refund grant that does not expire.
            if r.bi is not null and not (b_entitled[r.bi] and b_max[r.bi] is null) then
              need := -applied * r.cost;
              gid := 'grt_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20);
              b_bal[r.bi] := b_bal[r.bi] + need;
              rf_id := rf_id || gid; rf_acc := rf_acc || r.account; rf_pool := rf_pool || r.pl;
              rf_ent := rf_ent || r.ent; rf_credits := rf_credits || need;
              g_acc_l := g_acc_l || r.account; g_pool_l := g_pool_l || r.pl; g_amount_l := g_amount_l || need;
              g_kind_l := g_kind_l || 'refund'::text; g_feat_l := g_feat_l || r.ent; g_grant_l := g_grant_l || gid;
              g_req_l := g_req_l || r.id;
            end if;
          end if;
        end if;
        o_count[r.i] := cur;
      elsif r.mode = 'block' and r.amount > 0
            and not (r.entitled and (r.mx is null or cur + held + r.amount <= r.mx)) then
        o_status[r.i] := 'blocked'; o_count[r.i] := cur + held;
        o_error[r.i] := format('Limit reached: %s of %s used', cur + held,
          case when r.entitled then coalesce(r.mx::text, 'unlimited') else '0' end);
      elsif r.bi is not null and r.amount > 0 and not (b_entitled[r.bi] and b_max[r.bi] is null)
            and coalesce(b_bal[r.bi] - b_held[r.bi], 0) < r.amount * r.cost then
        -- The pool cannot cover the draw: neither moves (the single-event path's 402).
        o_status[r.i] := 'blocked'; o_count[r.i] := cur;
        o_error[r.i] := format('Credits exhausted: %s %s needed, %s left', r.amount * r.cost, r.pl,
          greatest(coalesce(b_bal[r.bi] - b_held[r.bi], 0), 0));
      else
        prev := cur; cur := cur + r.amount;
        if not has_row then s_has_row[r.k] := true; s_created[r.k] := true; end if;
        s_touched[r.k] := true;
        o_status[r.i] := 'applied'; o_count[r.i] := cur;
        if r.amount <> 0 then
          h_acc := h_acc || r.account; h_ent := h_ent || r.ent; h_amount := h_amount || r.amount;
          h_count := h_count || cur; h_ts := h_ts || r.ts;
        end if;
        if r.bi is not null and r.amount > 0 and not (b_entitled[r.bi] and b_max[r.bi] is null) then
          need := r.amount * r.cost;
          b_bal[r.bi] := b_bal[r.bi] - need; b_debit[r.bi] := b_debit[r.bi] + need;
          b_last[r.bi] := r.i; b_feature[r.bi] := r.ent;
          g_acc_l := g_acc_l || r.account; g_pool_l := g_pool_l || r.pl; g_amount_l := g_amount_l || -need;
          g_kind_l := g_kind_l || 'debit'::text; g_feat_l := g_feat_l || r.ent; g_grant_l := g_grant_l || null::text;
          g_req_l := g_req_l || r.id;
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
      if s_cur[r.k] is not null then s_cur[r.k] := cur; end if;
    end loop;
    -- Counters to write (the touched ones), rows step 3 created that no event used (to delete).
    for k in 1 .. array_length(l_acc, 1) loop
      continue when s_cur[k] is null;
      if s_touched[k] then
        w_acc := w_acc || l_acc[k]; w_ent := w_ent || l_ent[k]; w_count := w_count || s_cur[k];
      end if;
      if s_new[k] and not s_created[k] then
        d_acc := d_acc || l_acc[k]; d_ent := d_ent || l_ent[k];
      end if;
    end loop;

    -- 5. Write everything, one statement each; the balances first (their rows are locked).
    update credit_balances b set balance = v.bal, unallocated = b.unallocated + v.debit, updated_at = now()
      from unnest(b_acc, b_pool, b_bal, b_orig, b_debit) as v(a, pl, bal, orig, debit)
     where v.bal is not null and (v.bal <> v.orig or v.debit <> 0)
       and b.app_id = p_app and b.account_id = v.a and b.pool_id = v.pl and b.entity_id = '';
    insert into credit_grants (id, app_id, account_id, pool_id, entity_id, amount, remaining, source, source_ref,
      created_at)
    select v.id, p_app, v.a, v.pl, '', v.credits, v.credits, 'refund', v.e, now()
      from unnest(rf_id, rf_acc, rf_pool, rf_ent, rf_credits) as v(id, a, pl, e, credits);
    insert into credit_ledger (app_id, account_id, pool_id, entity_id, grant_id, amount, kind, feature, request_id,
      created_at)
    select p_app, v.a, v.pl, '', v.gid, v.amount, v.kind, v.feat, v.req, now()
      from unnest(g_acc_l, g_pool_l, g_amount_l, g_kind_l, g_feat_l, g_grant_l, g_req_l)
        with ordinality as v(a, pl, amount, kind, feat, gid, req, k)
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
        'entity', null, 'pool', b_pool[k], 'pool_name', b_name[k], 'balance', b_bal[k],
        'previous_balance', b_orig[k], 'granted_per_period', case when b_entitled[k] then b_max[k] end,
        'feature', b_feature[k])), now(), true);
    end loop;

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
