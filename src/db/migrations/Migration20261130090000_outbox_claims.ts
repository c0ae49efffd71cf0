import { Migration } from '@mikro-orm/migrations';

/**
 * Outbox claims name their dispatch pass (`claimed_by`), so a claim can be a short lease its dispatcher renews (10 s
 * instead of a fixed minute: the claims of a process that died are free again within seconds), and giving a row back
 * or recording its failure touches it only while it is still that pass's (src/temporal/outbox.ts).
 */
export class Migration20261130090000_outbox_claims extends Migration {
  override name = 'Migration20261130090000_outbox_claims';

  override up(): void {
    this.addSql(`alter table "outbox" add column "claimed_by" text null;`);
  }

  override down(): void {
    this.addSql(`alter table "outbox" drop column "claimed_by";`);
  }
}
