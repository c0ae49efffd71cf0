import type { z } from 'zod';
import { badRequest } from './errors.js';

/** First zod issue as `<field>: <message>`, the convention for every 400 from validation. */
export function describeIssue(issue: z.core.$ZodIssue, root: string): string {
  const field = issue.path.length ? issue.path.map(String).join('.') : root;
  let message = issue.message;
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) message = 'is required';
  return `${field}: ${message}`;
}

/** The path of the first string (or key) holding a NUL character, which PostgreSQL text cannot store. */
function nulAt(value: unknown, path: string[]): string[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulAt(value[i], [...path, String(i)]);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes('\u0000')) return [...path, k.replaceAll('\u0000', '\\u0000')];
      const found = nulAt(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

/** Parses one part of the request; a failure is a 400 naming the field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, root: string): z.output<S> {
  const nul = nulAt(value, []);
  if (nul) throw badRequest(`${nul.length ? nul.join('.') : root}: must not contain a NUL character`);
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(describeIssue(result.error.issues[0], root));
  return result.data;
}

/** decodeURIComponent that answers null for a malformed escape instead of throwing. */
export function decodeComponent(value: string): string | null {
  try {
    return decodeURIComponent(value);
  } catch {
    return null;
  }
}
