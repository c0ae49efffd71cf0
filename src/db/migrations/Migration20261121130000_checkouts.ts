import { Migration } from '@mikro-orm/migrations';

/** Checkouts: purchase attempts at the payment provider, completed exactly once. */
export class Migration20261121130000_checkouts extends Migration {
  override name = 'Migration20261121130000_checkouts';

  override up(): void {
    this.addSql(`create table "checkouts" (
      "id" varchar(255) primary key,
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "offer_id" varchar(255) null,
      "plan_id" varchar(255) not null,
      "interval" varchar(255) not null check ("interval" in ('month', 'year')),
      "currency" varchar(255) not null,
      "price" double precision not null,
      "list_price" double precision not null,
      "cycles" int null,
      "extras" jsonb not null,
      "bumps" jsonb not null default '[]',
      "account_id" varchar(255) null,
      "email" varchar(255) null,
      "ref" varchar(255) null,
      "return_url" text not null,
      "cancel_url" text not null,
      "status" varchar(255) not null check ("status" in ('created', 'completed', 'cancelled', 'expired')),
      "provider_subscription_id" varchar(255) null,
      "provider_order_id" varchar(255) null,
      "approve_url" text null,
      "bump_approve_url" text null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now(),
      "completed_at" timestamptz null);`);
    this.addSql(`create index "checkouts_app_time_index" on "checkouts" ("app_id", "created_at" desc);`);
    this.addSql(`create index "checkouts_offer_index" on "checkouts" ("app_id", "offer_id", "status");`);
    this.addSql(
      `create unique index "checkouts_provider_subscription_index" on "checkouts" ` +
        `("provider_subscription_id") where "provider_subscription_id" is not null;`,
    );
  }
}
