import { Migration } from '@mikro-orm/migrations';

/**
 * `GET /apps/:appId/subscriptions` pages newest first on `(created_at, account_id)`: with this index a page is a
 * range scan from the cursor on, however deep the page, instead of sorting every subscription of the app.
 */
export class Migration20261125090000_subscriptions_list extends Migration {
  override name = 'Migration20261125090000_subscriptions_list';

  override up(): void {
    this.addSql(
      `create index "subscriptions_app_created_index" on "subscriptions" ("app_id", "created_at" desc, "account_id" desc);`,
    );
  }

  override down(): void {
    this.addSql(`drop index if exists "subscriptions_app_created_index";`);
  }
}
