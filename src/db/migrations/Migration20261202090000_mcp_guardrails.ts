import { Migration } from '@mikro-orm/migrations';

/**
 * Agent guard-rails (issue 33, item 4): whether a connection's client can be asked (elicitation); a spend cap
 * and usage caps per entitlement, per OAuth connection
 * (`mcp_connections.guardrails`) and for the app's key-based MCP use (`mcp_settings.key_guardrails`). What each
 * holder used in a period is one row per cap and period start, moved by single statements that refuse to pass the cap
 * (src/mcp/guardrails.ts); `holder` is the connection id, or `keys` for the app's key sessions.
 */
export class Migration20261202090000_mcp_guardrails extends Migration {
  override name = 'Migration20261202090000_mcp_guardrails';

  override up(): void {
    this.addSql(`alter table "mcp_connections" add column "guardrails" jsonb null;`);
    // Whether the client declared MCP elicitation at its last initialize (destructive tools then ask the person).
    this.addSql(`alter table "mcp_connections" add column "elicitation" boolean not null default false;`);
    this.addSql(`alter table "mcp_settings" add column "key_guardrails" jsonb null;`);
    this.addSql(`create table "mcp_cap_counters" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "holder" varchar(255) not null,
      "cap" varchar(300) not null,
      "period_start" timestamptz not null,
      "used" numeric not null default 0 check ("used" >= 0),
      primary key ("app_id", "holder", "cap", "period_start"));`);
  }

  override down(): void {
    this.addSql(`drop table if exists "mcp_cap_counters";`);
    this.addSql(`alter table "mcp_settings" drop column if exists "key_guardrails";`);
    this.addSql(`alter table "mcp_connections" drop column if exists "elicitation";`);
    this.addSql(`alter table "mcp_connections" drop column if exists "guardrails";`);
  }
}
