import { z } from 'zod';

/** `page` / `per_page` (default 20, at most 100; outside the bounds is a 400 naming the field). */
export const pageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
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
    .transform((n) => Math.min(n, max));
}
