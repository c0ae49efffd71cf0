import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { fanOutPending } from '../webhooks/webhooks.service.js';
import { CHANGE_SQL } from './usage.service.js';

/** The most usage events one batch may carry. */
export const INGEST_MAX_EVENTS = 1000;

export interface IngestEvent {
  id: string;
  account: string;
  entitlement: string;
  amount: number;
  timestamp?: string;
}

export interface IngestResult {
  id: string;
  status: 'applied' | 'blocked' | 'error';
  /** The counter after the event (applied), or what blocked it (blocked). */
  count: number | null;
  error: string | null;
  /** True when this event id was ingested before: the result is the first one, nothing changed. */
  duplicate: boolean;
}

interface Row {
  idx: number;
  event_id: string;
  status: IngestResult['status'];
  count: string | null;
  error: string | null;
  duplicate: boolean;
  events: string[];
}

/**
 * Applies a batch of usage events in one round trip: `usage_ingest` (a database function) runs the
 * single-event change statement once per event in one transaction (events of one counter in the order
 * sent; counters in a fixed order, so concurrent batches do not deadlock), so each event meets the
 * same limit and threshold-event rules as `.../amount`, and each event id is recorded with its result
 * in the same transaction (a re-sent event answers its first result and changes nothing). A deadlock
 * with a concurrent batch touching the same counters in another order rolls the whole batch back and
 * it runs again. Threshold events it wrote are then fanned out (one more round trip, when there are any).
 */
export async function ingestUsage(ctx: Ctx, events: IngestEvent[]): Promise<IngestResult[]> {
  const run = async (attempt: number): Promise<Row[]> => {
    try {
      return await sql<Row>(ctx.em, 'select * from usage_ingest($1, $2::jsonb, $3)', [
        ctx.app.id,
        JSON.stringify(events),
        CHANGE_SQL,
      ]);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // A deadlock with another batch, or a row deleted mid-way: the whole batch rolled back; run it again.
      if ((code === '40P01' || code === '23503') && attempt < 4) return run(attempt + 1);
      throw err;
    }
  };
  const rows = (await run(1)).sort((a, b) => a.idx - b.idx);
  const fired = rows.flatMap((r) => r.events ?? []);
  if (fired.length)
    await fanOutPending(ctx.deps, fired).catch((err) =>
      ctx.deps.logger.warn({ err, events: fired }, 'usage event fan-out deferred to the relay'),
    );
  return rows.map((r) => ({
    id: r.event_id,
    status: r.status,
    count: r.count === null ? null : Number(r.count),
    error: r.error,
    duplicate: r.duplicate,
  }));
}
