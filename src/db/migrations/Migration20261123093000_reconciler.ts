import { Migration } from '@mikro-orm/migrations';

/**
 * The reconciler's repair counters (one row per kind of waiting row), and an index for its look at
 * reservations still held (the table keeps settled ones until retention removes them).
 */
export class Migration20261123093000_reconciler extends Migration {
  override name = 'Migration20261123093000_reconciler';

  override up(): void {
    this.addSql(`create table "reconciler_repairs" (
      "kind" varchar(255) primary key,
      "repaired" bigint not null default 0,
      "last_repaired_at" timestamptz null);`);
    this.addSql(
      `create index "usage_reservations_held_index" on "usage_reservations" ("expires_at") where "status" = 'held';`,
    );
  }

  override down(): void {
    this.addSql(`drop index if exists "usage_reservations_held_index";`);
    this.addSql(`drop table if exists "reconciler_repairs";`);
  }
}
