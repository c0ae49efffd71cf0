import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { sql } from '../db/sql.js';

/** `page` / `per_page` (default 20, at most 100; outside the bounds is a 400 naming the field). */
export const pageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1).describe('Page number, from 1, e.g. 2. Omitted: 1.'),
  per_page: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(20)
    .describe('Items per page, 1 to 100, e.g. 50. Omitted: 20.'),
});
export type PageQuery = z.output<typeof pageQuery>;

export interface Page<T> {
  data: T[];
  total: number;
  page: number;
  per_page: number;
}

export function pageOf<T>(data: T[], total: number, q: PageQuery): Page<T> {
  return { data, total, page: q.page, per_page: q.per_page };
}

export const pageOffset = (q: PageQuery) => (q.page - 1) * q.per_page;

/** `limit` for newest-first log lists: a positive integer, capped at `max` (larger values give `max`). */
export function limitParam(def: number, max: number) {
  return z.coerce
    .number()
    .int()
    .min(1)
    .default(def)
    .transform((n) => Math.min(n, max))
    .describe(`How many, newest first, up to ${max}. Omitted: ${def}.`);
}

/**
 * Where a cursor list continues: after the item with this sort key. `at` is the item's `created_at` with the
 * database's full precision (microseconds, ISO 8601 UTC), `id` its unique tie-breaker within the list.
 */
export interface Cursor {
  at: string;
  id: string;
}

const CURSOR_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/** The opaque `next_cursor` a cursor list answers: base64url of `[at, id]`. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.at, c.id])).toString('base64url');
}

export function decodeCursor(text: string): Cursor | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 2) return null;
    const [at, id] = v as unknown[];
    if (typeof at !== 'string' || typeof id !== 'string' || !CURSOR_AT.test(at) || Number.isNaN(Date.parse(at)))
      return null;
    if (id.length === 0 || id.length > 255 || id.includes('\u0000')) return null;
    return { at, id };
  } catch {
    return null;
  }
}

/**
 * `cursor`: a `next_cursor` the same list answered (anything else is a 400 naming the field). Empty (`cursor=`, what a
 * form or a client that joins parameters sends for "none") is the first page, as omitting it is.
 */
export const cursorParam = z
  .string()
  .max(400)
  .transform((text, ctx): Cursor | undefined => {
    if (text === '') return undefined;
    const c = decodeCursor(text);
    if (!c) {
      ctx.addIssue({ code: 'custom', message: 'is not a next_cursor this list answered' });
      return z.NEVER;
    }
    return c;
  });

/**
 * Query of a newest-first cursor list: `limit` (default `def`, capped at `max`) and `cursor`, the previous
 * page's `next_cursor`. Keyset pagination on `(created_at, id)`: an item added or changed between two pages
 * neither repeats nor shifts the next page, and a page costs the same however deep it is.
 */
export function cursorQuery(def: number, max: number) {
  return z.object({
    limit: limitParam(def, max),
    cursor: cursorParam.optional().describe("The last page's `next_cursor`. Omitted or empty: the first page."),
  });
}

/** A page of a cursor list: `next_cursor` is null on the last page. */
export function cursorPageSchema<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null when there is none.'),
  });
}

/**
 * The SQL expression of a `timestamptz` column as a cursor's `at` (microseconds, UTC), so the next page starts
 * exactly after it (a JavaScript Date would drop the microseconds).
 */
export const cursorAtSql = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * One page from rows fetched with `limit + 1`: the first `limit` rows, and a cursor after the last of them when
 * there was one more.
 */
export function cursorPage<R>(rows: R[], limit: number, keyOf: (row: R) => Cursor) {
  const page = rows.slice(0, limit);
  const more = rows.length > limit;
  return { rows: page, next_cursor: more ? encodeCursor(keyOf(page[page.length - 1])) : null };
}

/**
 * One newest-first page of `table` by keyset on `(created_at, id)`: the rows whose columns equal `filters` (a
 * filter whose value is undefined is left out), after `q.cursor`, at most `q.limit`. `select` lists the columns
 * wanted; table and column names come from code, values are bound.
 */
export async function newestFirstPage<R extends { id: string }>(
  em: EntityManager,
  table: string,
  select: string,
  filters: Record<string, unknown>,
  q: { limit: number; cursor?: Cursor },
): Promise<{ rows: R[]; next_cursor: string | null }> {
  const params: unknown[] = [q.limit + 1];
  const where: string[] = [];
  for (const [column, value] of Object.entries(filters)) {
    if (value === undefined) continue;
    params.push(value);
    where.push(`${column} = $${params.length}`);
  }
  if (q.cursor) {
    params.push(q.cursor.at, q.cursor.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::text)`);
  }
  const rows = await sql<R & { cursor_at: string }>(
    em,
    `select ${select}, ${cursorAtSql('created_at')} as cursor_at from ${table}
      where ${where.join(' and ')} order by created_at desc, id desc limit $1`,
    params,
  );
  const page = cursorPage(rows, q.limit, (r) => ({ at: r.cursor_at, id: r.id }));
  return { rows: page.rows.map(({ cursor_at: _at, ...row }) => row as unknown as R), next_cursor: page.next_cursor };
}
