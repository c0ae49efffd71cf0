import { Migration } from '@mikro-orm/migrations';

/**
 * When the app's publishable key was first used (the components or the SDK's PublicClient in a page): the console's
 * getting-started checklist shows "components embedded" from it. Set once, by an update that only matches null.
 */
export class Migration20261203090000_publishable_first_use extends Migration {
  override name = 'Migration20261203090000_publishable_first_use';

  override up(): void {
    this.addSql(`alter table "apps" add column "publishable_first_used_at" timestamptz null;`);
  }

  override down(): void {
    this.addSql(`alter table "apps" drop column if exists "publishable_first_used_at";`);
  }
}
