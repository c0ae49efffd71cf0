import { Migration } from '@mikro-orm/migrations';

/** Regular-price provider plans per app; provider state and pending plan changes on subscriptions. */
export class Migration20261121150000_billing_sync extends Migration {
  override name = 'Migration20261121150000_billing_sync';

  override up(): void {
    this.addSql(
      `alter table "payment_connections" add column "provider_refs" jsonb not null default '{"productId": null, "plans": {}}';`,
    );
    this.addSql(`alter table "subscriptions"
      add column "provider_status" varchar(255) null,
      add column "provider_plan_id" varchar(255) null,
      add column "last_payment_at" timestamptz null,
      add column "last_payment_failed_at" timestamptz null,
      add column "pending_change" jsonb null;`);
  }
}
