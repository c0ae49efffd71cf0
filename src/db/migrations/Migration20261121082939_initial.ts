import { Migration } from '@mikro-orm/migrations';

export class Migration20261121082939_initial extends Migration {
  override name = 'Migration20261121082939_initial';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "apps" ("id" varchar(255) not null, "name" text not null, "plan" text null, ` +
        `"api_key" varchar(255) not null, "public_key" varchar(255) not null, "checkout_url" text ` +
        `null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ` +
        `("id"));`,
    );
    this.addSql(`alter table "apps" add constraint "apps_api_key_unique" unique ("api_key");`);
    this.addSql(`alter table "apps" add constraint "apps_public_key_unique" unique ("public_key");`);

    this.addSql(
      `create table "outbox" ("id" bigserial primary key, "kind" varchar(255) not null, ` +
        `"workflow_type" varchar(255) null, "workflow_id" varchar(255) not null, "payload" jsonb ` +
        `not null, "attempts" int not null default 0, "last_error" text null, "next_attempt_at" ` +
        `timestamptz not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "outbox_workflow_id_index" on "outbox" ("workflow_id");`);
    this.addSql(`create index "outbox_next_attempt_at_index" on "outbox" ("next_attempt_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "apps" cascade;`);
    this.addSql(`drop table if exists "outbox" cascade;`);
  }
}
