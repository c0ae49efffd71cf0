import { Migration } from '@mikro-orm/migrations';

/**
 * An invitation is accepted with a secret sent to the invited address (by email), never with its id, which the
 * workspace's owners and admins see in the pending list: `token_hash` is the SHA-256 of that secret (the secret itself
 * is never stored). `made_person` marks the invitation whose acceptance created the person, so a person made through
 * an invitation and then removed from their last workspace is deleted (a later, real invitation of the address starts
 * afresh). Pending invitations from before this have no secret: their links were shown to the person who invited, so
 * they are revoked (invite the address again; the new link goes by email).
 */
export class Migration20261211010000_invitation_tokens extends Migration {
  override name = 'Migration20261211010000_invitation_tokens';

  override up(): void {
    this.addSql(`alter table workspace_invitations add column token_hash text;`);
    this.addSql(`alter table workspace_invitations add column made_person boolean not null default false;`);
    this.addSql(`create unique index workspace_invitations_token on workspace_invitations (token_hash);`);
    this.addSql(`update workspace_invitations set status = 'revoked' where status = 'pending';`);
  }
}
