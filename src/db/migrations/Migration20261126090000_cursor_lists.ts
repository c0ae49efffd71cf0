import { Migration } from '@mikro-orm/migrations';

/**
 * `GET /apps/:appId/webhooks/:webhookId/deliveries`, `GET /apps/:appId/checkouts` and `GET /apps/:appId/mcp/calls`
 * page newest first on `(created_at, id)`: with the id in the index a page is a range scan from the cursor on.
 * Each new index replaces the one on its first two columns, which it covers.
 */
export class Migration20261126090000_cursor_lists extends Migration {
  override name = 'Migration20261126090000_cursor_lists';

  override up(): void {
    this.addSql(
      `create index "webhook_deliveries_endpoint_created_index" on "webhook_deliveries" ("endpoint_id", "created_at" desc, "id" desc);`,
    );
    this.addSql(`drop index if exists "webhook_deliveries_endpoint_time_index";`);
    this.addSql(`create index "checkouts_app_created_index" on "checkouts" ("app_id", "created_at" desc, "id" desc);`);
    this.addSql(`drop index if exists "checkouts_app_time_index";`);
    this.addSql(`create index "mcp_calls_app_created_index" on "mcp_calls" ("app_id", "created_at" desc, "id" desc);`);
    this.addSql(`drop index if exists "mcp_calls_app_time_index";`);
  }

  override down(): void {
    this.addSql(
      `create index "webhook_deliveries_endpoint_time_index" on "webhook_deliveries" ("endpoint_id", "created_at" desc);`,
    );
    this.addSql(`drop index if exists "webhook_deliveries_endpoint_created_index";`);
    this.addSql(`create index "checkouts_app_time_index" on "checkouts" ("app_id", "created_at" desc);`);
    this.addSql(`drop index if exists "checkouts_app_created_index";`);
    this.addSql(`create index "mcp_calls_app_time_index" on "mcp_calls" ("app_id", "created_at" desc);`);
    this.addSql(`drop index if exists "mcp_calls_app_created_index";`);
  }
}
