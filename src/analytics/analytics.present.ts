// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { type IReport } from './analytics.entities.js';
import type * as S from './analytics.schemas.js';
import type { Interval } from './analytics.schemas.js';

export function presentReport(r: IReport): z.input<typeof S.reportSchema> {
  return {
    id: r.id,
    name: r.name,
    entitlements: r.entitlements ?? null,
    interval: (r.interval ?? null) as Interval | null,
    created_at: iso(r.createdAt)!,
    updated_at: iso(r.updatedAt)!,
  };
}
