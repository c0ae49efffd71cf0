import { Migration } from '@mikro-orm/migrations';

/**
 * A save that needs the buyer's approval at the provider (a cancel flow's discount or downgrade) waits in the new
 * session status `pending` until the provider reports it (issue 30, item 4); the customer's own return and cancel
 * URLs are kept for the way back from the provider. A subscription remembers how its last plan change ended
 * (`last_change`: applied, refused, expired), for the change's workflow and the operator.
 */
export class Migration20261201100000_pending_saves extends Migration {
  override name = 'Migration20261201100000_pending_saves';

  override up(): void {
    this.addSql(`alter table "cancel_sessions" drop constraint if exists "cancel_sessions_status_check";`);
    this.addSql(`alter table "cancel_sessions" add constraint "cancel_sessions_status_check"
      check ("status" in ('open', 'pending', 'saved', 'cancelled', 'abandoned'));`);
    this.addSql(`alter table "subscriptions" add column "last_change" jsonb null;`);
  }

  override down(): void {
    this.addSql(`alter table "subscriptions" drop column if exists "last_change";`);
    this.addSql(`update "cancel_sessions" set "status" = 'open' where "status" = 'pending';`);
    this.addSql(`alter table "cancel_sessions" drop constraint if exists "cancel_sessions_status_check";`);
    this.addSql(`alter table "cancel_sessions" add constraint "cancel_sessions_status_check"
      check ("status" in ('open', 'saved', 'cancelled', 'abandoned'));`);
  }
}
