import { Migration } from '@mikro-orm/migrations';

/**
 * Who holds a cancel session's claim (`claimed_by`): the request id of the account actor's intent that applies it.
 * A retried step of that intent (its first attempt killed after the provider call, before its commit) takes its own
 * claim over instead of meeting it as "being changed by another call"; any other call still gets the 409 until the
 * claim is released or lapses. Null for a claim of a call that is not an actor's intent.
 */
export class Migration20261220100000_claim_owner extends Migration {
  override name = 'Migration20261220100000_claim_owner';

  override up(): void {
    this.addSql(`alter table "cancel_sessions" add column "claimed_by" varchar(255) null;`);
  }

  override down(): void {
    this.addSql(`alter table "cancel_sessions" drop column if exists "claimed_by";`);
  }
}
