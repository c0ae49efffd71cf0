// The app's clock read from the database (src/apps/clock.ts has the pure parts: app time from an offset, the
// dunning settings, calendar months).
import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';

/**
 * The app's clock offset as the database has it now (the record behind a credential may be a moment old: a clock
 * moved by the previous request must count for this one).
 */
export async function clockOffsetOf(em: EntityManager, appId: string): Promise<number> {
  const [r] = await sql<{ clock_offset_ms: string }>(em, 'select clock_offset_ms from apps where id = $1', [appId]);
  return Number(r?.clock_offset_ms ?? 0);
}

/** The app's time, its clock read from the database now. */
export const freshAppNow = async (em: EntityManager, appId: string) =>
  new Date(Date.now() + (await clockOffsetOf(em, appId)));
