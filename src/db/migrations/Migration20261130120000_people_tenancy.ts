import { Migration } from '@mikro-orm/migrations';

/**
 * Tenancy in the service's own tables. A workspace is the spec's org (`orgs.id`, which nothing renames); who belongs
 * to it, with which role, is `workspace_members`, and invitations are `workspace_invitations`, bound to the invited
 * address (one pending invitation per workspace and address). Better Auth keeps people, their passwords and
 * sessions only: none of its identifiers (an organization's slug or name) decides what a person may reach.
 *
 * `apps.read_only` makes the demo workspace's app read-only as a property of the app (src/http/guard.ts), set
 * here for a demo seeded before it existed.
 */
export class Migration20261130120000_people_tenancy extends Migration {
  override name = 'Migration20261130120000_people_tenancy';

  override up(): void {
    this.addSql(`alter table apps add column read_only boolean not null default false;`);
    this.addSql(`update apps set read_only = true
      where id in (select jsonb_array_elements_text(app_ids) from orgs where id = 'demo');`);
    this.addSql(`create table workspace_members (
      org_id text not null references orgs (id) on delete cascade,
      user_id text not null,
      role text not null check (role in ('owner', 'admin', 'member', 'viewer')),
      created_at timestamptz not null default now(),
      primary key (org_id, user_id)
    );`);
    this.addSql(`create index workspace_members_user on workspace_members (user_id);`);
    this.addSql(`create table workspace_invitations (
      id text primary key,
      org_id text not null references orgs (id) on delete cascade,
      email text not null,
      role text not null check (role in ('admin', 'member', 'viewer')),
      status text not null default 'pending' check (status in ('pending', 'accepted', 'revoked')),
      invited_by text not null,
      accepted_by text,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    );`);
    this.addSql(`create unique index workspace_invitations_pending
      on workspace_invitations (org_id, lower(email)) where status = 'pending';`);
  }
}
