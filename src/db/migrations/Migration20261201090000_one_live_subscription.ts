import { Migration } from '@mikro-orm/migrations';

/**
 * One live subscription per account (issue 30). `subscriptions` keeps one row per account (its primary key), so the
 * gap was never a second row: it was a second purchase overwriting the row of a live one, leaving the first provider
 * subscription billing with nobody tracking it. The database now refuses that:
 * - a trigger refuses to replace the provider subscription of a row that is live (active or paused): a new one may
 *   only take the place of one that has ended (cancelled). A completion that finds another live subscription cancels
 *   its own at the provider instead (src/checkouts/checkouts.service.ts).
 * - a provider subscription is live for at most one account of an app (partial unique index).
 * - a checkout says why it was cancelled (`cancel_reason`), e.g. that it duplicated a live subscription.
 */
export class Migration20261201090000_one_live_subscription extends Migration {
  override name = 'Migration20261201090000_one_live_subscription';

  override up(): void {
    this.addSql(`create or replace function "subscriptions_one_live"() returns trigger language plpgsql as $$
      begin
        if old."status" in ('active', 'paused') and new."provider_subscription_id" <> old."provider_subscription_id" then
          raise exception 'account % already has a live subscription (%)', old."account_id", old."provider_subscription_id"
            using errcode = 'unique_violation', constraint = 'subscriptions_one_live';
        end if;
        return new;
      end $$;`);
    this.addSql(`create trigger "subscriptions_one_live" before update of "provider_subscription_id" on "subscriptions"
      for each row execute function "subscriptions_one_live"();`);
    this.addSql(`create unique index "subscriptions_live_provider_unique"
      on "subscriptions" ("app_id", "provider_subscription_id") where "status" in ('active', 'paused');`);
    this.addSql(`alter table "checkouts" add column "cancel_reason" text null;`);
  }

  override down(): void {
    this.addSql(`alter table "checkouts" drop column if exists "cancel_reason";`);
    this.addSql(`drop index if exists "subscriptions_live_provider_unique";`);
    this.addSql(`drop trigger if exists "subscriptions_one_live" on "subscriptions";`);
    this.addSql(`drop function if exists "subscriptions_one_live"();`);
  }
}
