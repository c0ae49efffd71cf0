import { Migration } from '@mikro-orm/migrations';

/**
 * Idempotency keys (`Idempotency-Key` on POST): one compact row per app, credential and key, kept 24
 * hours. `digest` is 16 bytes of SHA-256 over (app, credential, key), `request_hash` 16 bytes over
 * the request; `status` is null while the first request runs. Read and written with SQL only.
 */
export class Migration20261123090000_idempotency_keys extends Migration {
  override name = 'Migration20261123090000_idempotency_keys';

  override up(): void {
    this.addSql(`create table "idempotency_keys" (
      "digest" bytea primary key,
      "app_id" varchar(255) null,
      "request_hash" bytea not null,
      "status" smallint null,
      "body" jsonb null,
      "created_at" timestamptz not null default now());`);
    this.addSql(`create index "idempotency_keys_created_at_index" on "idempotency_keys" ("created_at");`);
  }

  override down(): void {
    this.addSql(`drop table if exists "idempotency_keys";`);
  }
}
