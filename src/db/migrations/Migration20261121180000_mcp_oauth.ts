import { Migration } from '@mikro-orm/migrations';

/**
 * The MCP server and its OAuth 2.1 sign-in: per-app settings, registered clients, pending
 * authorization requests, single-use codes, token hashes, connections and their call log; agent threads.
 */
export class Migration20261121180000_mcp_oauth extends Migration {
  override name = 'Migration20261121180000_mcp_oauth';

  override up(): void {
    this.addSql(`create table "mcp_settings" (
      "app_id" varchar(255) primary key references "apps" ("id") on delete cascade,
      "enabled" boolean not null default true,
      "access_level" varchar(255) not null default 'write' check ("access_level" in ('read', 'write', 'full')),
      "tool_overrides" jsonb not null default '{}',
      "updated_at" timestamptz not null default now());`);

    this.addSql(`create table "oauth_clients" (
      "id" varchar(255) primary key,
      "client_name" text null,
      "redirect_uris" jsonb not null,
      "token_endpoint_auth_method" varchar(255) not null default 'none',
      "client_secret_hash" varchar(255) null,
      "client_uri" text null,
      "logo_uri" text null,
      "created_at" timestamptz not null default now());`);

    this.addSql(`create table "mcp_connections" (
      "id" varchar(255) primary key,
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "kind" varchar(255) not null check ("kind" in ('oauth', 'secret_key', 'admin_key')),
      "name" text not null,
      "client_id" varchar(255) null references "oauth_clients" ("id") on delete cascade,
      "user_id" text null,
      "user_name" text null,
      "user_email" text null,
      "access_level" varchar(255) null check ("access_level" in ('read', 'write', 'full')),
      "created_at" timestamptz not null default now(),
      "last_used_at" timestamptz null);`);
    // One connection per person and client on an app: approving again updates its level.
    this.addSql(
      `create unique index "mcp_connections_oauth_unique" on "mcp_connections" ("app_id", "client_id", "user_id") where "kind" = 'oauth';`,
    );
    this.addSql(
      `create index "mcp_connections_app_index" on "mcp_connections" ("app_id", "last_used_at" desc nulls last);`,
    );

    this.addSql(`create table "oauth_requests" (
      "id" varchar(255) primary key,
      "client_id" varchar(255) not null references "oauth_clients" ("id") on delete cascade,
      "redirect_uri" text not null,
      "code_challenge" varchar(255) not null,
      "state" text null,
      "scope" varchar(255) null,
      "resource" text null,
      "app_id" varchar(255) null references "apps" ("id") on delete cascade,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null default now());`);

    this.addSql(`create table "oauth_codes" (
      "hash" varchar(255) primary key,
      "connection_id" varchar(255) not null references "mcp_connections" ("id") on delete cascade,
      "client_id" varchar(255) not null,
      "redirect_uri" text not null,
      "code_challenge" varchar(255) not null,
      "resource" text null,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null default now());`);

    this.addSql(`create table "oauth_tokens" (
      "hash" varchar(255) primary key,
      "kind" varchar(255) not null check ("kind" in ('access', 'refresh')),
      "pair_id" varchar(255) not null,
      "connection_id" varchar(255) not null references "mcp_connections" ("id") on delete cascade,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null default now());`);
    this.addSql(`create index "oauth_tokens_pair_index" on "oauth_tokens" ("pair_id");`);
    this.addSql(`create index "oauth_tokens_connection_index" on "oauth_tokens" ("connection_id");`);

    // No foreign key on connection_id: the log outlives a removed connection (and is still filterable by its id).
    this.addSql(`create table "mcp_calls" (
      "id" varchar(255) primary key,
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "connection_id" varchar(255) null,
      "tool" varchar(255) not null,
      "arguments" jsonb not null,
      "status" int not null,
      "is_error" boolean not null,
      "result" text not null,
      "truncated" boolean not null default false,
      "duration_ms" int not null,
      "created_at" timestamptz not null default now());`);
    this.addSql(`create index "mcp_calls_app_time_index" on "mcp_calls" ("app_id", "created_at" desc);`);
    this.addSql(`create index "mcp_calls_connection_time_index" on "mcp_calls" ("connection_id", "created_at" desc);`);
    this.addSql(`create index "mcp_calls_time_index" on "mcp_calls" ("created_at");`);

    this.addSql(`create table "agent_threads" (
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "id" varchar(255) not null,
      "user_id" text not null,
      "title" text null,
      "messages" jsonb not null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now(),
      primary key ("app_id", "id"));`);
    this.addSql(`create index "agent_threads_user_index" on "agent_threads" ("app_id", "user_id", "updated_at" desc);`);
  }
}
