import { Migration } from '@mikro-orm/migrations';

/**
 * Provider subscriptions offerkit made (through checkouts) that it does not track as an account's live subscription
 * but that are live at the provider (issue 30, item 3): from before one-live-subscription was enforced, or approved
 * after the checkout expired. The reconciler records each one it finds, and whether it cancelled it (a duplicate of a
 * live subscription) or only reports it. `provider_checked_at` marks checkouts already looked at.
 */
export class Migration20261201130000_untracked_subscriptions extends Migration {
  override name = 'Migration20261201130000_untracked_subscriptions';

  override up(): void {
    this.addSql(`alter table "checkouts" add column "provider_checked_at" timestamptz null;`);
    this.addSql(`create table "untracked_subscriptions" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "provider_subscription_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "checkout_id" varchar(255) null,
      "provider_status" varchar(255) not null,
      "action" varchar(255) not null check ("action" in ('cancelled', 'reported')),
      "live_subscription_id" varchar(255) null,
      "found_at" timestamptz not null default now(),
      primary key ("app_id", "provider_subscription_id"));`);
  }

  override down(): void {
    this.addSql(`drop table if exists "untracked_subscriptions";`);
    this.addSql(`alter table "checkouts" drop column if exists "provider_checked_at";`);
  }
}
