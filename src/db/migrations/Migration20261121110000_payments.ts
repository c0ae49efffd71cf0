import { Migration } from '@mikro-orm/migrations';

/** Payment provider connections (one per app). */
export class Migration20261121110000_payments extends Migration {
  override name = 'Migration20261121110000_payments';

  override up(): void {
    this.addSql(`create table "payment_connections" (
      "app_id" varchar(255) primary key references "apps" ("id") on delete cascade,
      "provider" varchar(255) not null default 'paypal',
      "env" varchar(255) not null check ("env" in ('sandbox', 'live')),
      "client_id" varchar(255) not null,
      "client_secret" text not null,
      "webhook_id" varchar(255) null,
      "webhook_url" text null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now());`);
  }
}
