import { Migration } from '@mikro-orm/migrations';

/**
 * Until when a client made from a Client ID Metadata Document is used without fetching its document again (its
 * `Cache-Control: max-age`, within bounds): every API process reads it, so a document is fetched once per lifetime,
 * not once per process. Null for registered clients.
 */
export class Migration20261210090000_oauth_metadata_fresh extends Migration {
  override name = 'Migration20261210090000_oauth_metadata_fresh';

  override up(): void {
    this.addSql(`alter table "oauth_clients" add column "metadata_fresh_until" timestamptz null;`);
  }

  override down(): void {
    this.addSql(`alter table "oauth_clients" drop column if exists "metadata_fresh_until";`);
  }
}
