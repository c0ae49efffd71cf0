// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { type ICancelFlow } from './cancel-flows.entities.js';
import type * as S from './cancel-flows.schemas.js';

export function presentFlow(
  f: ICancelFlow,
  recent?: { sessions: number; saves: number },
): z.input<typeof S.flowSchema> {
  return {
    id: f.id,
    name: f.name,
    status: f.status,
    steps: f.steps,
    ...(recent ? { sessions_30d: recent.sessions, saves_30d: recent.saves } : {}),
    created_at: iso(f.createdAt)!,
    updated_at: iso(f.updatedAt)!,
  };
}
