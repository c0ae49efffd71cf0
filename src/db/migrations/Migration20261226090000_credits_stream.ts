import { Migration } from '@mikro-orm/migrations';

/**
 * The change stream's `credits` events (issue 44): a balance that moves by anything but a draw (a grant, an expiry, a
 * refund, a reversal, a top-up) is one `credits` event per account and pool, written by a statement trigger on the
 * ledger in the transaction of the change. A draw (`debit`) is not one: it comes with its feature's `usage` event,
 * on the hottest path, and a reader that keeps balances reads the account again on a usage event of a feature that
 * draws from a pool.
 */
export class Migration20261226090000_credits_stream extends Migration {
  override name = 'Migration20261226090000_credits_stream';

  override up(): void {
    this.addSql(`create function access_credits_changed() returns trigger language plpgsql as $fn$
begin
  insert into access_changes (app_id, account_id, kind, data)
    select distinct app_id, account_id, 'credits', jsonb_build_object('pool', pool_id)
      from new_rows where kind <> 'debit';
  return null;
end
$fn$;`);
    this.addSql(
      `create trigger access_credit_ledger_insert after insert on "credit_ledger" referencing new table as new_rows ` +
        `for each statement execute function access_credits_changed();`,
    );
  }

  override down(): void {
    this.addSql(`drop trigger if exists access_credit_ledger_insert on "credit_ledger";`);
    this.addSql(`drop function if exists access_credits_changed();`);
  }
}
