import { Migration } from '@mikro-orm/migrations';

/**
 * Security hardening: rate-limit counters shared by every API process (unlogged: they are disposable),
 * refresh-token families with reuse detection and audiences, why a connection was cut off, and whether a
 * registered OAuth client ever completed a sign-in (unused ones are purged).
 */
export class Migration20261123090000_security extends Migration {
  override name = 'Migration20261123090000_security';

  override up(): void {
    // The shape rate-limiter-flexible's PostgreSQL store uses (key, points, expire in epoch ms).
    this.addSql(`create unlogged table "rate_limits" (
      "key" varchar(255) primary key,
      "points" integer not null default 0,
      "expire" bigint null);`);
    this.addSql(`create index "rate_limits_expire_index" on "rate_limits" ("expire");`);

    this.addSql(`alter table "oauth_tokens" add column "family_id" varchar(255) null;`);
    this.addSql(`update "oauth_tokens" set "family_id" = "pair_id";`);
    this.addSql(`alter table "oauth_tokens" alter column "family_id" set not null;`);
    this.addSql(`alter table "oauth_tokens" add column "audience" text null;`);
    this.addSql(`alter table "oauth_tokens" add column "rotated_at" timestamptz null;`);
    this.addSql(`create index "oauth_tokens_family_index" on "oauth_tokens" ("family_id");`);

    this.addSql(`alter table "mcp_connections" add column "cut_off_at" timestamptz null;`);
    this.addSql(`alter table "mcp_connections" add column "cut_off_reason" text null;`);

    this.addSql(`alter table "oauth_clients" add column "signed_in_at" timestamptz null;`);
    this.addSql(`update "oauth_clients" c set "signed_in_at" = c."created_at"
      where exists (select 1 from "mcp_connections" m where m."client_id" = c."id");`);
    this.addSql(
      `create index "oauth_clients_unused_index" on "oauth_clients" ("created_at") where "signed_in_at" is null;`,
    );
  }
}
