import { Migration } from '@mikro-orm/migrations';

/**
 * Top-up revenue over a window (issue 42, item 6: `GET /apps/:appId/analytics/credits/topups`) reads an app's pack
 * orders PayPal confirmed captured, by the time of the capture: a partial index on exactly those rows, so the window
 * is one range scan however many orders were only created, abandoned or cancelled.
 */
export class Migration20261228120000_pack_orders_captured_index extends Migration {
  override name = 'Migration20261228120000_pack_orders_captured_index';

  override up(): void {
    this.addSql(`create index "credit_pack_orders_captured_index" on "credit_pack_orders" ("app_id", "completed_at")
      where "status" = 'completed';`);
  }

  override down(): void {
    this.addSql(`drop index if exists "credit_pack_orders_captured_index";`);
  }
}
