import { Migration } from '@mikro-orm/migrations';

/**
 * `usage_ingest_batch` reads every table by key, whatever the statistics say. Its first statement finds the batch's
 * ids already ingested (`event_id = any($ids)`): planned while `usage_ingested` was small or had not been analysed
 * yet, that is a sequential scan, and PL/pgSQL keeps the plan it chose, so every batch then compared its ids with
 * every row of the table until autovacuum's next analyse replanned it. Measured with the bench's data: 34,000 rows
 * in, a 500-event batch took 608 ms in that statement alone (0.2 ms by the primary key), and ingest fell from about
 * 8,000 to 870 events/s. Every statement of the function is a lookup by key or a write, so the function runs with
 * sequential scans off (a planner setting of the function's own, restored when it returns).
 */
export class Migration20261128090000_usage_ingest_by_key extends Migration {
  override name = 'Migration20261128090000_usage_ingest_by_key';

  override up(): void {
    this.addSql(
      `alter function usage_ingest_batch(text, text[], text[], text[], bigint[], timestamptz[], text) ` +
        `set enable_seqscan = off;`,
    );
  }

  override down(): void {
    this.addSql(
      `alter function usage_ingest_batch(text, text[], text[], text[], bigint[], timestamptz[], text) ` +
        `reset enable_seqscan;`,
    );
  }
}
