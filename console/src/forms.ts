// Small helpers for the editors' forms: ids as the API normalizes them, and number fields that may be blank.

/** An id as the API stores it: lowercased, spaces to underscores, everything outside a-z, 0-9 and _ dropped. */
export const normalizeId = (raw: string) =>
  raw
    .toLowerCase()
    .replace(/ /g, '_')
    .replace(/[^a-z0-9_]/g, '');

/** A number field's value: a number, or '' while the field is blank. */
export type Num = number | '';

/** Mantine's NumberInput hands back a number, or a string while the text is blank or unfinished. */
export const num = (v: number | string): Num => (typeof v === 'number' ? v : v.trim() === '' ? '' : Number(v));

/** A blank field as null (for fields where null has a meaning: unlimited, for ever). */
export const orNull = (v: Num) => (v === '' ? null : v);

/** The first id made from `base` that `taken` does not hold (`base`, `base_2`, `base_3` ...). */
export function uniqueId(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  const root = normalizeId(base) || 'step';
  if (!used.has(root)) return root;
  for (let n = 2; ; n++) if (!used.has(`${root}_${n}`)) return `${root}_${n}`;
}

/** A whole number from `min` to `max`, or the schema's message (the API's wording for the same check). */
export function intBetween(v: Num, min: number, max: number, required = true): string | null {
  if (v === '') return required ? 'is required' : null;
  if (!Number.isInteger(v)) return 'must be a whole number';
  if (v < min || v > max) return `must be between ${min} and ${max}`;
  return null;
}

/** Text the schema trims and bounds: null when fine, else the problem. */
export function textProblem(v: string, max: number, required: boolean): string | null {
  if (required && v.trim() === '') return 'must not be empty';
  if (v.trim().length > max) return `must be at most ${max} characters`;
  return null;
}

/** A value for `<input type="datetime-local">` from an ISO time, in the browser's time zone. */
export function localInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** An ISO time (UTC) from a `datetime-local` value, or null when blank. */
export const isoFromLocal = (v: string) => (v ? new Date(v).toISOString() : null);
