import { Migration } from '@mikro-orm/migrations';

/**
 * The questions destructive MCP tools ask the person (elicitation), shared by every API process: the answer is a
 * POST of its own that a load balancer may send to another process than the one holding the call's stream
 * (src/mcp/elicitation.ts). pending → answered (by the answer, wherever it lands) → taken (once, by the process that
 * asked); or expired (no answer in time, or the stream closed).
 */
export class Migration20261203100000_mcp_elicitations extends Migration {
  override name = 'Migration20261203100000_mcp_elicitations';

  override up(): void {
    this.addSql(`create table "mcp_elicitations" (
      "id" varchar(64) not null primary key,
      "app_id" varchar(255) not null references "apps" ("id") on delete cascade,
      "connection_id" varchar(255) null,
      "status" varchar(16) not null default 'pending'
        check ("status" in ('pending', 'answered', 'taken', 'expired')),
      "answer" jsonb null,
      "created_at" timestamptz not null default now(),
      "answered_at" timestamptz null,
      "expires_at" timestamptz not null);`);
    this.addSql(`create index "mcp_elicitations_expires_at_index" on "mcp_elicitations" ("expires_at");`);
  }

  override down(): void {
    this.addSql(`drop table if exists "mcp_elicitations";`);
  }
}
