import { Migration } from '@mikro-orm/migrations';

/**
 * How an app's plan changes are billed, per direction (issue 30, item 2): `{ upgrade, downgrade }`, each
 * `prorate_now`, `at_renewal` or `no_proration`; null means the defaults (upgrade `prorate_now`, downgrade
 * `at_renewal`, see docs/decisions/0310-plan-changes-post-apps-appid-namespaces-accountid.md).
 */
export class Migration20261201120000_plan_change_policy extends Migration {
  override name = 'Migration20261201120000_plan_change_policy';

  override up(): void {
    this.addSql(`alter table "apps" add column "plan_change_policy" jsonb null;`);
  }

  override down(): void {
    this.addSql(`alter table "apps" drop column if exists "plan_change_policy";`);
  }
}
