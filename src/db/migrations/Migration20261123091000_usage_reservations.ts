import { Migration } from '@mikro-orm/migrations';

/**
 * Reserve and commit: a counter's `held` amount (counted against the limit beside `count`) and one row
 * per reservation, whose status moves once from `held` to `committed`, `released` or `expired`.
 */
export class Migration20261123091000_usage_reservations extends Migration {
  override name = 'Migration20261123091000_usage_reservations';

  override up(): void {
    this.addSql(`alter table "usage_counters" add column "held" bigint not null default 0;`);
    this.addSql(`create table "usage_reservations" (
      "id" varchar(255) not null,
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "account_id" varchar(255) not null,
      "entitlement_id" varchar(255) not null,
      "amount" bigint not null check ("amount" > 0),
      "status" varchar(255) not null default 'held' check ("status" in ('held', 'committed', 'released', 'expired')),
      "committed" bigint null,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null default now(),
      "settled_at" timestamptz null,
      primary key ("app_id", "id"));`);
    this.addSql(
      `create index "usage_reservations_settled_index" on "usage_reservations" ("settled_at") where "settled_at" is not null;`,
    );
  }

  override down(): void {
    this.addSql(`drop table if exists "usage_reservations";`);
    this.addSql(`alter table "usage_counters" drop column "held";`);
  }
}
