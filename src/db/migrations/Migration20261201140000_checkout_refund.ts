import { Migration } from '@mikro-orm/migrations';

/**
 * A duplicate checkout's refund (issue 30): when two checkouts for one account were both approved, the duplicate is
 * cancelled at the provider and the first cycle PayPal charged at its activation is refunded; `refund` records what
 * was refunded (the provider's refund ids, the amount) or why nothing was.
 */
export class Migration20261201140000_checkout_refund extends Migration {
  override name = 'Migration20261201140000_checkout_refund';

  override up(): void {
    this.addSql(`alter table "checkouts" add column "refund" jsonb null;`);
  }

  override down(): void {
    this.addSql(`alter table "checkouts" drop column "refund";`);
  }
}
