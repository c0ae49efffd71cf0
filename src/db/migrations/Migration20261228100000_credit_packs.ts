import { Migration } from '@mikro-orm/migrations';

/**
 * Credit top-up packs (issue 42, item 4): a pack sells `amount` credits of a pool at `price`; a pack order is one
 * purchase of it through a PayPal order.
 *
 * - `credit_pack_orders.capture_id` is unique: the capture PayPal confirmed is granted once, whichever of the
 *   capture's answer and its notification comes first (the grant also carries `capture:<id>` as its period key,
 *   unique per account and pool).
 * - `credit_pack_refunds.refund_id` is the primary key: a refund notification PayPal sends again takes nothing twice.
 * - A pack is archived, not deleted, once anyone ordered it (docs/decisions: "Credits").
 */
export class Migration20261228100000_credit_packs extends Migration {
  override name = 'Migration20261228100000_credit_packs';

  override up(): void {
    this.addSql(`create table "credit_packs" (
      "app_id" varchar(255) not null,
      "id" varchar(255) not null,
      "pool_id" varchar(255) not null,
      "amount" bigint not null check ("amount" > 0),
      "price" numeric(12, 2) not null check ("price" > 0),
      "currency" varchar(3) not null,
      "archived_at" timestamptz null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now(),
      primary key ("app_id", "id"),
      foreign key ("app_id", "pool_id") references "entitlements" ("app_id", "id") on delete cascade);`);
    this.addSql(`create index "credit_packs_pool_index" on "credit_packs" ("app_id", "pool_id");`);

    this.addSql(`create table "credit_pack_orders" (
      "id" varchar(255) primary key,
      "app_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "pack_id" varchar(255) not null,
      "pool_id" varchar(255) not null,
      "amount" bigint not null check ("amount" > 0),
      "price" numeric(12, 2) not null,
      "currency" varchar(3) not null,
      "status" varchar(255) not null check ("status" in ('created', 'completed', 'cancelled')),
      "provider_order_id" varchar(255) null,
      "approve_url" text null,
      "return_url" text not null,
      "capture_id" varchar(255) null,
      "grant_id" varchar(255) null,
      "refunded" numeric(12, 2) not null default 0,
      "taken_back" bigint not null default 0,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now(),
      "completed_at" timestamptz null,
      foreign key ("app_id", "account_id") references "accounts" ("app_id", "id") on delete cascade);`);
    this.addSql(`create unique index "credit_pack_orders_capture_unique" on "credit_pack_orders" ("capture_id")
      where "capture_id" is not null;`);
    this.addSql(`create unique index "credit_pack_orders_provider_order_unique" on "credit_pack_orders"
      ("provider_order_id") where "provider_order_id" is not null;`);
    this.addSql(
      `create index "credit_pack_orders_account_index" on "credit_pack_orders" ("app_id", "account_id", "created_at");`,
    );
    this.addSql(`create index "credit_pack_orders_pack_index" on "credit_pack_orders" ("app_id", "pack_id");`);

    this.addSql(`create table "credit_pack_refunds" (
      "refund_id" varchar(255) primary key,
      "order_id" varchar(255) not null references "credit_pack_orders" ("id") on delete cascade,
      "amount" numeric(12, 2) not null,
      "credits_due" bigint not null,
      "credits_taken" bigint not null,
      "created_at" timestamptz not null default now());`);

    // The provider's payment a ledger row comes from: the capture of a top-up, the refund a reversal takes back for.
    this.addSql(`alter table "credit_ledger" add column "ref" varchar(255) null;`);
  }

  override down(): void {
    this.addSql(`alter table "credit_ledger" drop column if exists "ref";`);
    this.addSql(`drop table if exists "credit_pack_refunds";`);
    this.addSql(`drop table if exists "credit_pack_orders";`);
    this.addSql(`drop table if exists "credit_packs";`);
  }
}
