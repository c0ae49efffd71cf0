import { Migration } from '@mikro-orm/migrations';

/**
 * An OAuth access token's check and an MCP connection's state (its caps, whether its client can be asked) are kept
 * beside the app in each API process's credential cache (src/oauth/tokens.ts, src/mcp/connections.ts). Whatever
 * can end or narrow them announces itself as a change to the app (`<app id> <transaction id>` on `offerkit_apps`,
 * as the apps trigger sends), so every process drops what it kept:
 *
 * - a connection changed (anything but `last_used_at`, which calls keep up to date) or removed;
 * - a token deleted (revoked, rotated away, its family killed) while its connection is still there;
 * - a workspace member's role changed or the member removed, or an app taken out of a workspace (or the workspace
 *   deleted): a person-approved connection lasts only while that person's role on the app's workspace allows it.
 *
 * Writers that must be immediate (revocation, removal, a new level or caps, a lowered role) also announce the change
 * after their commit and wait for every process's answer (`CredentialCache.announce`).
 */
export class Migration20261222090000_mcp_oauth_cache extends Migration {
  override name = 'Migration20261222090000_mcp_oauth_cache';

  override up(): void {
    this.addSql(`create function mcp_connections_changed() returns trigger language plpgsql as $fn$
begin
  perform pg_notify('offerkit_apps', coalesce(new.app_id, old.app_id) || ' ' || pg_current_xact_id()::text);
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger mcp_connections_changed after update on mcp_connections for each row ` +
        `when ((to_jsonb(old) - 'last_used_at') is distinct from (to_jsonb(new) - 'last_used_at')) ` +
        `execute function mcp_connections_changed();`,
    );
    this.addSql(
      `create trigger mcp_connections_removed after delete on mcp_connections for each row ` +
        `execute function mcp_connections_changed();`,
    );

    // One notification per app whose tokens went (a connection deleted with its tokens announces itself above).
    this.addSql(`create function oauth_tokens_removed() returns trigger language plpgsql as $fn$
begin
  perform pg_notify('offerkit_apps', a.app_id || ' ' || pg_current_xact_id()::text)
     from (select distinct c.app_id from gone g join mcp_connections c on c.id = g.connection_id) a;
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger oauth_tokens_removed after delete on oauth_tokens referencing old table as gone ` +
        `for each statement execute function oauth_tokens_removed();`,
    );

    // A member's role lowered or removed: the apps of that workspace (a new member narrows nothing).
    this.addSql(`create function workspace_members_changed() returns trigger language plpgsql as $fn$
begin
  perform pg_notify('offerkit_apps', a.app_id || ' ' || pg_current_xact_id()::text)
     from orgs o, jsonb_array_elements_text(o.app_ids) as a(app_id) where o.id = old.org_id;
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger workspace_members_changed after update or delete on workspace_members for each row ` +
        `execute function workspace_members_changed();`,
    );
    // Apps taken out of a workspace (or the workspace deleted): those apps (an app added narrows nothing).
    this.addSql(`create function orgs_apps_changed() returns trigger language plpgsql as $fn$
begin
  perform pg_notify('offerkit_apps', a.app_id || ' ' || pg_current_xact_id()::text)
     from jsonb_array_elements_text(old.app_ids) as a(app_id)
    where tg_op = 'DELETE' or not (new.app_ids ? a.app_id);
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger orgs_apps_changed after update on orgs for each row ` +
        `when (old.app_ids is distinct from new.app_ids) execute function orgs_apps_changed();`,
    );
    this.addSql(`create trigger orgs_removed after delete on orgs for each row execute function orgs_apps_changed();`);
  }

  override down(): void {
    this.addSql(`drop trigger if exists orgs_removed on orgs;`);
    this.addSql(`drop trigger if exists orgs_apps_changed on orgs;`);
    this.addSql(`drop function if exists orgs_apps_changed();`);
    this.addSql(`drop trigger if exists workspace_members_changed on workspace_members;`);
    this.addSql(`drop function if exists workspace_members_changed();`);
    this.addSql(`drop trigger if exists oauth_tokens_removed on oauth_tokens;`);
    this.addSql(`drop function if exists oauth_tokens_removed();`);
    this.addSql(`drop trigger if exists mcp_connections_removed on mcp_connections;`);
    this.addSql(`drop trigger if exists mcp_connections_changed on mcp_connections;`);
    this.addSql(`drop function if exists mcp_connections_changed();`);
  }
}
