import { Migration } from '@mikro-orm/migrations';

/** Subscriptions (one per account) with their pause state. */
export class Migration20261121140000_subscriptions extends Migration {
  override name = 'Migration20261121140000_subscriptions';

  override up(): void {
    this.addSql(`create table "subscriptions" (
      "app_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "provider_subscription_id" varchar(255) not null,
      "checkout_id" varchar(255) null,
      "offer_id" varchar(255) null,
      "plan_id" varchar(255) not null,
      "interval" varchar(255) not null check ("interval" in ('month', 'year')),
      "currency" varchar(255) not null,
      "price" double precision not null,
      "status" varchar(255) not null check ("status" in ('active', 'paused', 'cancelled')),
      "renews_at" timestamptz null,
      "paused_at" timestamptz null,
      "resume_at" timestamptz null,
      "restore_plan_id" varchar(255) null,
      "pause_count" int not null default 0,
      "pause_reason" text null,
      "cancelled_at" timestamptz null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now(),
      primary key ("app_id", "account_id"),
      foreign key ("app_id", "account_id") references "accounts" ("app_id", "id") on delete cascade);`);
    this.addSql(`create index "subscriptions_provider_index" on "subscriptions" ("provider_subscription_id");`);
    this.addSql(
      `create index "subscriptions_due_pauses_index" on "subscriptions" ("resume_at") where "status" = 'paused';`,
    );
  }
}
