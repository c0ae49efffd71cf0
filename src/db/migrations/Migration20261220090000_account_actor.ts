import { Migration } from '@mikro-orm/migrations';
import { accountDef } from '../../../workflows/shared.js';

const ACTOR = accountDef.name;
const FACT = accountDef.signals.fact.name;

/**
 * One owner per account over time (issue 40): the account actor (`account/<app>/<account>`).
 *
 * - apps: a test clock (`clock_offset_ms`, app time = real time + offset; only test apps move it) and the dunning
 *   settings (`dunning`: grace days and what follows the grace period).
 * - subscriptions: `past_due` (a renewal payment failed), a cancellation at the end of the period (`cancel_at`),
 *   the dunning state, and a change approved for the renewal in a slot of its own (`scheduled_change`), apart from
 *   one waiting for the buyer (`pending_change`), so a replacement can wait while the scheduled one stands.
 * - account_timeline: every intent, fact, timer and outcome of an account's billing.
 * - Adoption, once: every account that has something over time (a live subscription, a change, a pause, a timed
 *   incentive) gets its actor through the outbox (started when Temporal is there), and the one-shot workflows of the
 *   previous release that waited on its dates are terminated (their activities do nothing any more: the actor owns
 *   those dates, so nothing is applied twice).
 */
export class Migration20261220090000_account_actor extends Migration {
  override name = 'Migration20261220090000_account_actor';

  override up(): void {
    this.addSql(`alter table "apps"
      add column "clock_offset_ms" bigint not null default 0 check ("clock_offset_ms" >= 0),
      add column "dunning" jsonb null;`);
    this.addSql(`alter table "subscriptions" drop constraint if exists "subscriptions_status_check";`);
    this.addSql(`alter table "subscriptions" add constraint "subscriptions_status_check"
      check ("status" in ('active', 'paused', 'past_due', 'cancelled'));`);
    this.addSql(`alter table "subscriptions"
      add column "scheduled_change" jsonb null,
      add column "cancel_at" timestamptz null,
      add column "past_due_since" timestamptz null,
      add column "payment_failures" int not null default 0,
      add column "next_payment_retry_at" timestamptz null,
      add column "outstanding_balance" double precision null,
      add column "grace_ends_at" timestamptz null,
      add column "dunning_after" varchar(255) null check ("dunning_after" in ('cancel', 'free_plan')),
      add column "dunning_restore_plan_id" varchar(255) null;`);
    // An approved change that waits for the renewal moves to its own slot.
    this.addSql(`update "subscriptions" set "scheduled_change" = "pending_change", "pending_change" = null
      where "pending_change"->>'scheduledAt' is not null;`);

    this.addSql(`create table "account_timeline" (
      "id" bigserial primary key,
      "app_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "at" timestamptz not null default now(),
      "app_time" timestamptz not null,
      "kind" varchar(255) not null check ("kind" in ('intent', 'refusal', 'fact', 'timer', 'outcome')),
      "type" varchar(255) not null,
      "summary" text not null,
      "by" jsonb null,
      "amount" jsonb null,
      "event_id" varchar(255) null,
      "workflow_id" text null,
      "run_id" text null,
      "data" jsonb null,
      foreign key ("app_id", "account_id") references "accounts" ("app_id", "id") on delete cascade);`);
    this.addSql(
      `create index "account_timeline_account_index" on "account_timeline" ("app_id", "account_id", "id" desc);`,
    );

    // Adoption: an actor for every account with something over time.
    this
      .addSql(`insert into "outbox" ("kind", "workflow_type", "workflow_id", "payload", "next_attempt_at", "created_at")
      select 'signalWithStart', '${ACTOR}', 'account/' || a.app_id || '/' || a.id,
        jsonb_build_object(
          'kind', 'signalWithStart', 'workflowType', '${ACTOR}',
          'workflowId', 'account/' || a.app_id || '/' || a.id,
          'args', jsonb_build_array(jsonb_build_object('appId', a.app_id, 'accountId', a.id)),
          'signal', '${FACT}', 'signalArgs', jsonb_build_array(jsonb_build_object('kind', 'adopted')),
          'searchAttributes', jsonb_build_object('AppId', a.app_id, 'AccountId', a.id),
          'summary', 'Account ' || a.id || ': billing over time'),
        now(), now()
      from "accounts" a
      left join "subscriptions" s on s.app_id = a.app_id and s.account_id = a.id
      where s.status in ('active', 'paused') or (a.incentive_id is not null and a.incentive_expires_at is not null);`);
    // The previous release's one-shot workflows that waited on those dates.
    const terminate = (idSql: string) =>
      `select 'terminate', null, ${idSql}, jsonb_build_object('kind', 'terminate', 'workflowId', ${idSql},
         'reason', 'Adopted by the account actor account/' || a.app_id || '/' || a.id), now(), now()`;
    this
      .addSql(`insert into "outbox" ("kind", "workflow_type", "workflow_id", "payload", "next_attempt_at", "created_at")
      ${terminate(`'pause/' || a.app_id || '/' || a.id || '/' || s.pause_count`)}
      from "accounts" a join "subscriptions" s on s.app_id = a.app_id and s.account_id = a.id
      where s.status = 'paused' and s.pause_count > 0;`);
    this
      .addSql(`insert into "outbox" ("kind", "workflow_type", "workflow_id", "payload", "next_attempt_at", "created_at")
      ${terminate(`'plan-change/' || a.app_id || '/' || a.id || '/' || (c->>'id')`)}
      from "accounts" a join "subscriptions" s on s.app_id = a.app_id and s.account_id = a.id
      cross join lateral (values (s.pending_change), (s.scheduled_change)) as v(c)
      where c->>'id' is not null;`);
    this
      .addSql(`insert into "outbox" ("kind", "workflow_type", "workflow_id", "payload", "next_attempt_at", "created_at")
      ${terminate(`'incentive-expiry/' || a.app_id || '/' || a.id`)}
      from "accounts" a where a.incentive_id is not null and a.incentive_expires_at is not null;`);
  }

  override down(): void {
    this.addSql(`drop table if exists "account_timeline";`);
    this.addSql(`alter table "subscriptions"
      drop column if exists "scheduled_change", drop column if exists "cancel_at",
      drop column if exists "past_due_since", drop column if exists "payment_failures",
      drop column if exists "next_payment_retry_at", drop column if exists "outstanding_balance",
      drop column if exists "grace_ends_at", drop column if exists "dunning_after",
      drop column if exists "dunning_restore_plan_id";`);
    this.addSql(`alter table "apps" drop column if exists "clock_offset_ms", drop column if exists "dunning";`);
  }
}
