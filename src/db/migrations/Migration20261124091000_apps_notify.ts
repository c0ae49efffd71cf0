import { Migration } from '@mikro-orm/migrations';

/**
 * Credential cache invalidation: every updated or deleted app row sends `<app id> <transaction id>` on
 * the channel `offerkit_apps` when its transaction commits (NOTIFY is transactional: a rolled-back change
 * sends nothing). Every API process listens and drops the app from its cache; the writer waits for their
 * answers (src/http/credential-cache.ts). A trigger rather than the service, so no path that changes an
 * app can forget it.
 */
export class Migration20261124091000_apps_notify extends Migration {
  override name = 'Migration20261124091000_apps_notify';

  override up(): void {
    this.addSql(`create function apps_changed() returns trigger language plpgsql as $fn$
begin
  perform pg_notify('offerkit_apps', old.id || ' ' || pg_current_xact_id()::text);
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger apps_changed after update or delete on apps for each row execute function apps_changed();`,
    );
  }

  override down(): void {
    this.addSql(`drop trigger if exists apps_changed on apps;`);
    this.addSql(`drop function if exists apps_changed();`);
  }
}
