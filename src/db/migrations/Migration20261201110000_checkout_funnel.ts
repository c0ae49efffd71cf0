import { Migration } from '@mikro-orm/migrations';

/**
 * The offer funnel counts what buyers did, not what was prepared for them (issue 30, item 5):
 * - a checkout records where it came from (`source`: `checkout`, or `upgrade_link` for one a 402 made), the limit
 *   it was made for, its tracked approval link (`open_url`, through the service) and when the buyer opened it;
 * - `upgrade_prompts` counts 402 answers per day, entitlement and upgrade (limit reached, and with a link shown).
 */
export class Migration20261201110000_checkout_funnel extends Migration {
  override name = 'Migration20261201110000_checkout_funnel';

  override up(): void {
    this.addSql(`alter table "checkouts"
      add column "source" varchar(255) not null default 'checkout' check ("source" in ('checkout', 'upgrade_link')),
      add column "upgrade_entitlement_id" varchar(255) null,
      add column "open_url" text null,
      add column "opened_at" timestamptz null;`);
    this.addSql(`create table "upgrade_prompts" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "day" date not null,
      "entitlement_id" varchar(255) not null,
      "plan_id" varchar(255) not null,
      "offer_id" varchar(255) not null default '',
      "prompts" bigint not null default 0,
      "links" bigint not null default 0,
      primary key ("app_id", "day", "entitlement_id", "plan_id", "offer_id"));`);
  }

  override down(): void {
    this.addSql(`drop table if exists "upgrade_prompts";`);
    this.addSql(`alter table "checkouts" drop column if exists "source", drop column if exists "upgrade_entitlement_id",
      drop column if exists "open_url", drop column if exists "opened_at";`);
  }
}
