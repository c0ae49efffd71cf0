import { Migration } from '@mikro-orm/migrations';

/**
 * When a checkout nobody paid expires, on its app's clock (a test clock moved forward moves it too): set when the
 * checkout is created (the app's time then, plus 24 hours), so a workflow restarted by the reconciler keeps the
 * same deadline. Older checkouts have none: theirs is 24 hours after `created_at`, as before.
 */
export class Migration20261221090000_checkout_expiry extends Migration {
  override name = 'Migration20261221090000_checkout_expiry';

  override up(): void {
    this.addSql(`alter table "checkouts" add column "expires_at" timestamptz null;`);
  }

  override down(): void {
    this.addSql(`alter table "checkouts" drop column if exists "expires_at";`);
  }
}
