import { Migration } from '@mikro-orm/migrations';

/**
 * Entities under an account (issue 42 item 5: a user, a workspace, a project), for per-entity credit balances and a
 * seats limit that counts them.
 *
 * - `account_entities`: the entities registered under an account; a per-entity pool's balances, grants and ledger
 *   rows carry one of these ids as `entity_id` ('' remains the account's own).
 * - `entitlements.counts_entities`: the usage entitlement whose counter is the number of registered entities (the
 *   seats); at most one per app (a unique partial index), so registering moves exactly one counter.
 * - `usage_reservations.entity_id`: the entity whose balance a reservation of a feature drawing from a per-entity pool
 *   holds ('' the account's own), so its commit debits that balance.
 */
export class Migration20261228110000_account_entities extends Migration {
  override name = 'Migration20261228110000_account_entities';

  override up(): void {
    this.addSql(`create table "account_entities" (
      "app_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "id" varchar(255) not null check ("id" <> ''),
      "name" text null,
      "created_at" timestamptz not null default now(),
      primary key ("app_id", "account_id", "id"),
      foreign key ("app_id", "account_id") references "accounts" ("app_id", "id") on delete cascade);`);
    this.addSql(`alter table "entitlements" add column "counts_entities" boolean not null default false;`);
    this.addSql(
      `create unique index "entitlements_counts_entities_unique" on "entitlements" ("app_id") where "counts_entities";`,
    );
    this.addSql(`alter table "usage_reservations" add column "entity_id" varchar(255) not null default '';`);
  }

  override down(): void {
    this.addSql(`alter table "usage_reservations" drop column "entity_id";`);
    this.addSql(`drop index if exists "entitlements_counts_entities_unique";`);
    this.addSql(`alter table "entitlements" drop column "counts_entities";`);
    this.addSql(`drop table if exists "account_entities";`);
  }
}
