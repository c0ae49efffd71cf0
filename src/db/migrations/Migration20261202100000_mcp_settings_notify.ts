import { Migration } from '@mikro-orm/migrations';

/**
 * An app's MCP settings are kept beside the app in each API process's credential cache (`companion`): a change to
 * them is announced as a change to the app (`<app id> <transaction id>` on `offerkit_apps`, as the apps trigger
 * sends), so every process drops both and the writer waits for their answers.
 */
export class Migration20261202100000_mcp_settings_notify extends Migration {
  override name = 'Migration20261202100000_mcp_settings_notify';

  override up(): void {
    this.addSql(`create function mcp_settings_changed() returns trigger language plpgsql as $fn$
begin
  perform pg_notify('offerkit_apps', coalesce(new.app_id, old.app_id) || ' ' || pg_current_xact_id()::text);
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger mcp_settings_changed after insert or update or delete on mcp_settings for each row ` +
        `execute function mcp_settings_changed();`,
    );
  }

  override down(): void {
    this.addSql(`drop trigger if exists mcp_settings_changed on mcp_settings;`);
    this.addSql(`drop function if exists mcp_settings_changed();`);
  }
}
