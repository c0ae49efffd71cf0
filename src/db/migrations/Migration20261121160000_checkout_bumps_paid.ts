import { Migration } from '@mikro-orm/migrations';

/** Whether a completed checkout's order bumps were paid (for offer stats). */
export class Migration20261121160000_checkout_bumps_paid extends Migration {
  override name = 'Migration20261121160000_checkout_bumps_paid';

  override up(): void {
    this.addSql(`alter table "checkouts" add column "bumps_paid" boolean not null default false;`);
  }
}
