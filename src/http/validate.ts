import type { z } from 'zod';
import { badRequest } from './errors.js';

/** First zod issue as `<field>: <message>`, the convention for every 400 from validation. */
export function describeIssue(issue: z.core.$ZodIssue, root: string): string {
  const field = issue.path.length ? issue.path.map(String).join('.') : root;
  let message = issue.message;
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) message = 'is required';
  return `${field}: ${message}`;
}

/** Parses one part of the request; a failure is a 400 naming the field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, root: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(describeIssue(result.error.issues[0], root));
  return result.data;
}
