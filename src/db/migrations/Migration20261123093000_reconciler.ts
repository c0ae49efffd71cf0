import { Migration } from '@mikro-orm/migrations';

/** The reconciler's repair counters (one row per kind of waiting row). */
export class Migration20261123093000_reconciler extends Migration {
  override name = 'Migration20261123093000_reconciler';

  override up(): void {
    this.addSql(`create table "reconciler_repairs" (
      "kind" varchar(255) primary key,
      "repaired" bigint not null default 0,
      "last_repaired_at" timestamptz null);`);
  }
}
