import { Migration } from '@mikro-orm/migrations';

/**
 * Deleting an app deletes everything it owns, in the one statement `DELETE /apps/:appId` runs.
 *
 * The cascades from `apps` alone could not: records of one app that reference one another keep NO ACTION keys (an
 * account's plan and incentive; an entitlement or add-on on a plan, an incentive or an account), so that deleting
 * one of them that is still in use fails even under a race (the service answers 409 first). The cascades of one
 * statement run as a queue: `apps` -> `entitlements` queued the check "no incentive override still names this
 * entitlement" before `apps` -> `incentives` -> `incentive_entitlements` had removed the overrides, and the delete
 * failed with a foreign-key violation (a 500) whenever an incentive carried an entitlement limit or an add-on, or
 * an account owned an add-on.
 *
 * A trigger before the app's row goes removes the referencing records first, referencing before referenced:
 * accounts (with their add-ons, extras, counters, subscriptions and cancel sessions), then incentives (with their
 * overrides and add-ons), then plans (with theirs); the cascades then find no reference left. By then the app's row
 * is locked (a BEFORE trigger runs on the locked row), so a concurrent write that references the app waits and then
 * fails, as it did with the cascades alone.
 *
 * It also removes the app's idempotency keys (`idempotency_keys.app_id` carries no foreign key: a usage add writes
 * one, and a key check per write would lock the app's row, see Migration20261127090000_usage_rows_unreferenced).
 */
export class Migration20261126081538_apps_delete_complete extends Migration {
  override name = 'Migration20261126081538_apps_delete_complete';

  override up(): void {
    this.addSql(`create function apps_deleting() returns trigger language plpgsql as $fn$
begin
  delete from accounts where app_id = old.id;
  delete from incentives where app_id = old.id;
  delete from plans where app_id = old.id;
  delete from idempotency_keys where app_id = old.id;
  return old;
end
$fn$;`);
    this.addSql(`create trigger apps_deleting before delete on apps for each row execute function apps_deleting();`);
  }

  override down(): void {
    this.addSql(`drop trigger if exists apps_deleting on apps;`);
    this.addSql(`drop function if exists apps_deleting();`);
  }
}
