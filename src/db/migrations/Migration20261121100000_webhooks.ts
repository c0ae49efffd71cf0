import { Migration } from '@mikro-orm/migrations';

/** Webhook endpoints and deliveries; events get a flag for fan-out still to do (usage threshold events). */
export class Migration20261121100000_webhooks extends Migration {
  override name = 'Migration20261121100000_webhooks';

  override up(): void {
    this.addSql(`create table "webhook_endpoints" (
      "id" varchar(255) primary key,
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "url" text not null,
      "description" text null,
      "events" jsonb not null,
      "enabled" boolean not null default true,
      "source" varchar(255) not null default 'custom',
      "secret" varchar(255) not null,
      "disabled_reason" text null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now());`);
    this.addSql(`create index "webhook_endpoints_app_index" on "webhook_endpoints" ("app_id", "created_at");`);

    this.addSql(`create table "webhook_deliveries" (
      "id" varchar(255) primary key,
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "endpoint_id" varchar(255) not null references "webhook_endpoints" ("id") on delete cascade,
      "event_id" varchar(255) not null,
      "event_type" varchar(255) not null,
      "status" varchar(255) not null check ("status" in ('pending', 'succeeded', 'failed')),
      "attempts" int not null default 0,
      "next_attempt_at" timestamptz null,
      "last_attempt_at" timestamptz null,
      "response_status" int null,
      "response_body" text null,
      "error" text null,
      "duration_ms" int null,
      "test" boolean not null default false,
      "payload" jsonb not null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now());`);
    this.addSql(
      `create index "webhook_deliveries_endpoint_time_index" on "webhook_deliveries" ("endpoint_id", "created_at" desc);`,
    );
    this.addSql(
      `create index "webhook_deliveries_endpoint_pending_index" on "webhook_deliveries" ("endpoint_id") where "status" = 'pending';`,
    );
    this.addSql(`create index "webhook_deliveries_time_index" on "webhook_deliveries" ("created_at");`);

    this.addSql(`alter table "events" add column "fanout_pending" boolean not null default false;`);
    this.addSql(`create index "events_fanout_pending_index" on "events" ("created_at") where "fanout_pending";`);
    this.addSql(`create index "events_time_index" on "events" ("created_at");`);
  }
}
