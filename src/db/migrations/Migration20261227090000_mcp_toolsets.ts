import { Migration } from '@mikro-orm/migrations';

/**
 * Toolsets (issue 43, item 3): which groups of tools `tools/list` names beside the core and discovery tools, chosen
 * by the app (`mcp_settings.toolsets`, none by default) or by an OAuth connection (`mcp_connections.toolsets`, null:
 * the app's). Both tables already announce their changes to every API process (Migration20261202100000,
 * Migration20261222090000).
 */
export class Migration20261227090000_mcp_toolsets extends Migration {
  override name = 'Migration20261227090000_mcp_toolsets';

  override up(): void {
    this.addSql(`alter table "mcp_settings" add column "toolsets" jsonb not null default '[]';`);
    this.addSql(`alter table "mcp_connections" add column "toolsets" jsonb null;`);
  }

  override down(): void {
    this.addSql(`alter table "mcp_connections" drop column if exists "toolsets";`);
    this.addSql(`alter table "mcp_settings" drop column if exists "toolsets";`);
  }
}
