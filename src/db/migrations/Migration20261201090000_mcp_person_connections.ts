import { Migration } from '@mikro-orm/migrations';

/**
 * An MCP OAuth connection approved by a person through the console (`person`): it works only while that person is
 * still a member of a workspace listing the app, with a role whose ceiling covers the connection's level (viewer:
 * read, member: write, admin and owner: full). Connections approved with the admin key are not bound to anyone.
 */
export class Migration20261201090000_mcp_person_connections extends Migration {
  override name = 'Migration20261201090000_mcp_person_connections';

  override up(): void {
    this.addSql(`alter table "mcp_connections" add column "person" boolean not null default false;`);
  }
}
