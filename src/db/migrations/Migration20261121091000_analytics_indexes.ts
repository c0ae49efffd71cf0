import { Migration } from '@mikro-orm/migrations';

/**
 * Covering indexes for analytics over usage history: each aggregate (per app, per entitlement, per
 * account, within a time window) is answered by an index-only scan of its window.
 */
export class Migration20261121091000_analytics_indexes extends Migration {
  override name = 'Migration20261121091000_analytics_indexes';

  override up(): void {
    this.addSql(`drop index if exists "usage_events_app_time_index";`);
    this.addSql(`drop index if exists "usage_events_entitlement_time_index";`);
    this.addSql(`drop index if exists "usage_events_account_time_index";`);
    this.addSql(
      `create index "usage_events_app_time_index" on "usage_events" ("app_id", "created_at" desc) ` +
        `include ("entitlement_id", "account_id", "amount");`,
    );
    this.addSql(
      `create index "usage_events_entitlement_time_index" on "usage_events" ("app_id", ` +
        `"entitlement_id", "created_at" desc) include ("account_id", "amount");`,
    );
    this.addSql(
      `create index "usage_events_account_time_index" on "usage_events" ("app_id", "account_id", ` +
        `"created_at" desc) include ("entitlement_id", "amount");`,
    );
  }
}
