import { Migration } from '@mikro-orm/migrations';

/**
 * Credits (issue 42): an entitlement of type `credits` is a pool; a `usage` entitlement may draw from one at a cost
 * per unit. Balances, grants and the ledger are per (app, account, pool, entity); `entity_id` is '' for the
 * account's own balance.
 *
 * - `credit_balances.balance` is the spendable balance: the ledger's sum, never below zero (CHECK). Every writer
 *   of a pool's grants holds this row's lock first, so it is the one place concurrent writers meet.
 * - `credit_balances.unallocated`: debits not yet taken from particular grants. The hot path only moves the
 *   balance (one guarded UPDATE); the debits are spread over the grants, earliest-expiring first, under the same
 *   lock whenever the grants' own remainders matter (an expiry, a refund at the provider). So
 *   `balance = sum(live grants' remaining) - unallocated` always holds (docs/decisions/README.md, "Credits").
 * - `credit_grants.period_key`: a plan's grant for one period is written once (unique per account, pool, entity).
 */
export class Migration20261223090000_credits extends Migration {
  override name = 'Migration20261223090000_credits';

  override up(): void {
    this.addSql(`alter table "entitlements" drop constraint if exists "entitlements_type_check";`);
    this.addSql(
      `alter table "entitlements" add constraint "entitlements_type_check" check ("type" in ('usage', 'boolean', 'credits'));`,
    );
    this.addSql(`alter table "entitlements"
      add column "credit_pool_id" varchar(255) null,
      add column "credit_cost" bigint null check ("credit_cost" >= 1),
      add column "credit_rollover_cap" bigint null check ("credit_rollover_cap" >= 0),
      add column "credit_per_entity" boolean not null default false,
      add constraint "entitlements_credit_pool_fk" foreign key ("app_id", "credit_pool_id")
        references "entitlements" ("app_id", "id"),
      add constraint "entitlements_credit_draw_check" check (("credit_pool_id" is null) = ("credit_cost" is null));`);
    this.addSql(
      `create index "entitlements_credit_pool_index" on "entitlements" ("app_id", "credit_pool_id") where "credit_pool_id" is not null;`,
    );

    this.addSql(`create table "credit_balances" (
      "app_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "pool_id" varchar(255) not null,
      "entity_id" varchar(255) not null default '',
      "balance" bigint not null default 0 check ("balance" >= 0),
      "unallocated" bigint not null default 0 check ("unallocated" >= 0),
      "updated_at" timestamptz not null default now(),
      primary key ("app_id", "account_id", "pool_id", "entity_id"),
      foreign key ("app_id", "account_id") references "accounts" ("app_id", "id") on delete cascade,
      foreign key ("app_id", "pool_id") references "entitlements" ("app_id", "id") on delete cascade);`);

    this.addSql(`create table "credit_grants" (
      "id" varchar(255) primary key,
      "app_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "pool_id" varchar(255) not null,
      "entity_id" varchar(255) not null default '',
      "amount" bigint not null check ("amount" > 0),
      "remaining" bigint not null check ("remaining" >= 0 and "remaining" <= "amount"),
      "expires_at" timestamptz null,
      "source" varchar(255) not null check ("source" in ('plan', 'api', 'pack', 'refund', 'rollover')),
      "source_ref" text null,
      "reason" text null,
      "period_key" text null,
      "created_at" timestamptz not null default now(),
      foreign key ("app_id", "account_id", "pool_id", "entity_id")
        references "credit_balances" ("app_id", "account_id", "pool_id", "entity_id") on delete cascade);`);
    this.addSql(`create index "credit_grants_live_index" on "credit_grants"
      ("app_id", "account_id", "pool_id", "entity_id", "expires_at" nulls last, "created_at", "id") where "remaining" > 0;`);
    this.addSql(`create index "credit_grants_expiry_index" on "credit_grants" ("app_id", "account_id", "expires_at")
      where "remaining" > 0 and "expires_at" is not null;`);
    this.addSql(`create unique index "credit_grants_period_unique" on "credit_grants"
      ("app_id", "account_id", "pool_id", "entity_id", "period_key") where "period_key" is not null;`);

    this.addSql(`create table "credit_ledger" (
      "id" bigserial primary key,
      "app_id" varchar(255) not null,
      "account_id" varchar(255) not null,
      "pool_id" varchar(255) not null,
      "entity_id" varchar(255) not null default '',
      "grant_id" varchar(255) null,
      "amount" bigint not null,
      "kind" varchar(255) not null check ("kind" in ('grant', 'debit', 'expiry', 'refund', 'reversal', 'topup')),
      "feature" varchar(255) null,
      "request_id" varchar(255) null,
      "idempotency_key" bytea null,
      "workflow_id" varchar(255) null,
      "created_at" timestamptz not null default now(),
      foreign key ("app_id", "account_id", "pool_id", "entity_id")
        references "credit_balances" ("app_id", "account_id", "pool_id", "entity_id") on delete cascade);`);
    this.addSql(
      `create index "credit_ledger_account_index" on "credit_ledger" ("app_id", "account_id", "pool_id", "entity_id", "id" desc);`,
    );
  }

  override down(): void {
    this.addSql(`drop table if exists "credit_ledger";`);
    this.addSql(`drop table if exists "credit_grants";`);
    this.addSql(`drop table if exists "credit_balances";`);
    this.addSql(`alter table "entitlements" drop constraint if exists "entitlements_credit_draw_check",
      drop constraint if exists "entitlements_credit_pool_fk", drop column if exists "credit_pool_id",
      drop column if exists "credit_cost", drop column if exists "credit_rollover_cap",
      drop column if exists "credit_per_entity";`);
    this.addSql(`alter table "entitlements" drop constraint if exists "entitlements_type_check";`);
    this.addSql(
      `alter table "entitlements" add constraint "entitlements_type_check" check ("type" in ('usage', 'boolean'));`,
    );
  }
}
