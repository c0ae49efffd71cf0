// JSON Schema (as zod and the OpenAPI document write it) to Python types, for the Python SDK's generator
// (scripts/sdk/python.ts): objects become pydantic models (answers) or TypedDicts (nested inputs), named after where
// they first appear, and one shape is one class wherever it recurs (an account is `Account` in every answer).

/** A JSON Schema node: zod's `toJSONSchema` output, or a node of the OpenAPI document built from it. */
export type Schema = { [key: string]: unknown };

const PY_KEYWORDS = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for from ' +
    'global if import in is lambda nonlocal not or pass raise return try while with yield'
  ).split(' '),
);

/** Attributes of pydantic's BaseModel a field may not take as its name (pydantic refuses or warns). */
const MODEL_ATTRIBUTES = new Set(
  (
    'copy dict json parse_obj parse_raw parse_file from_orm construct schema schema_json validate ' +
    'update_forward_refs fields model_config model_fields'
  ).split(' '),
);

/** Names the annotations of a class use: a field so named would hide them in the class body. */
const ANNOTATION_NAMES = new Set('list dict str int float bool Any Literal Sequence Mapping JsonValue'.split(' '));

/** Keys that carry no type information: a shape is the same class whatever its documentation or limits say. */
const DOC_KEYS = new Set([
  'description',
  'title',
  'examples',
  'example',
  'default',
  'deprecated',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'propertyNames',
  'not',
]);

export const isIdentifier = (s: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s);
export const isKeyword = (s: string) => PY_KEYWORDS.has(s);
export const pascal = (s: string) =>
  s.replace(/(^|[._\-\s])([A-Za-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, '');
export const snake = (s: string) =>
  s
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9_]/g, '_')
    .toLowerCase();

/** A Python name for a JSON key or a generated method: itself when it can be, else a safe spelling and `_`. */
export function pyName(key: string, reserved: ReadonlySet<string> = new Set()): string {
  if (isIdentifier(key) && !isKeyword(key) && !reserved.has(key)) return key;
  const base = key.replace(/[^A-Za-z0-9_]/g, '_').replace(/^(?=\d)/, '_');
  return `${base}_`;
}

/** A Python string literal for a JSON string (JSON's escapes are Python's). */
export const pyStr = (s: string) => JSON.stringify(s);

function literal(v: unknown): string {
  if (v === null) return 'None';
  if (typeof v === 'string') return pyStr(v);
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  throw new Error(`python SDK: no Python literal for ${JSON.stringify(v)}`);
}

/** A line cut at spaces to fit `width`; continuation lines get `hang` more spaces than the line's own indent. */
export function wrap(line: string, width: number, hang = 0): string[] {
  const indent = line.match(/^ */)![0];
  const out: string[] = [];
  let rest = line;
  let prefix = indent;
  while (rest.length > width) {
    const cut = rest.lastIndexOf(' ', width);
    if (cut <= prefix.length) break;
    out.push(rest.slice(0, cut).trimEnd());
    prefix = indent + ' '.repeat(hang);
    rest = prefix + rest.slice(cut + 1).trimStart();
  }
  out.push(rest);
  return out;
}

/** A docstring's text, indented and wrapped at 120 columns, with what would end it early escaped. */
export function docstring(text: string, indent: string): string {
  const body = text.replace(/\\/g, '\\\\').replace(/"""/g, '\\"\\"\\"').trim();
  if (!body.includes('\n') && body.length + indent.length + 6 <= 120) return `${indent}"""${body}"""\n`;
  const lines = body
    .split('\n')
    .flatMap((l) => (l.trim() ? wrap(`${indent}${l}`, 117, l.startsWith(' ') ? 4 : 0) : ['']));
  return `${indent}"""${lines.join('\n').slice(indent.length)}\n${indent}"""\n`;
}

/** Python source without its docstrings and comments: what a name must appear in to need its import. */
export const codeOnly = (text: string) => text.replace(/"""[\s\S]*?"""/g, '').replace(/#.*$/gm, '');

/** The schema without the keys that do not change its Python type (recursively), as a stable key. */
function shapeKey(s: unknown): string {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (!v || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Schema)) if (!DOC_KEYS.has(k)) out[k] = strip(x);
    return out;
  };
  return JSON.stringify(strip(s));
}

const isObject = (s: Schema) =>
  (s.type === 'object' || (!s.type && !!s.properties)) && Object.keys((s.properties as Schema) ?? {}).length > 0;

function singular(field: string): string {
  if (field === 'data') return 'Item';
  const p = pascal(field);
  if (/ies$/.test(p)) return p.replace(/ies$/, 'y');
  if (/[^s]s$/.test(p)) return p.slice(0, -1);
  return `${p}Item`;
}

/** One field of a generated class or of a method's keyword arguments. */
export interface PyField {
  /** The JSON key. */
  key: string;
  /** The Python name (the key, unless it cannot be one). */
  name: string;
  type: string;
  required: boolean;
  description?: string;
}

/**
 * Python types for JSON Schemas, collecting the classes they need. `model`: pydantic models for answers (a field
 * absent from some answers is `T | None = None`); `param`: TypedDicts for nested inputs (`NotRequired[T]`).
 */
export class PyTypes {
  /** Class definitions in the order they must appear (a class after the classes it uses). */
  readonly blocks: string[] = [];
  /** Class names in the order they were made. */
  readonly names: string[] = [];
  private readonly byShape = new Map<string, string>();
  /** Shapes whose name is settled but whose class is not written yet. */
  private readonly reserved = new Set<string>();

  constructor(
    readonly kind: 'model' | 'param',
    /** `#/components/schemas/*` of the document the schemas come from. */
    private readonly components: Record<string, Schema>,
    /** Names taken by the other kind and by hand-written code: never reused. */
    private readonly taken: Set<string>,
  ) {}

  /** The Python type of a schema; objects become classes named from `hint`. */
  type(s: Schema | undefined, hint: string): string {
    if (!s || Object.keys(s).every((k) => DOC_KEYS.has(k))) return 'Any';
    if (typeof s.$ref === 'string') {
      const ref = s.$ref.replace('#/components/schemas/', '');
      if (ref === 'JsonValue') return 'JsonValue';
      const target = this.components[ref];
      if (!target) throw new Error(`python SDK: unknown $ref ${s.$ref}`);
      return this.type(target, ref);
    }
    const variants = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (variants) {
      const objects = variants.filter(isObject);
      return union(
        variants.map((v) => {
          if (!isObject(v) || objects.length < 2) return this.type(v, hint);
          // Members of a union of objects are named by their constant tag (`object: "plan_change"`) if they have one.
          const tag = Object.values((v.properties as Record<string, Schema>) ?? {}).find(
            (p) => typeof p.const === 'string',
          );
          return this.type(v, tag ? pascal(tag.const as string) : `${hint}Variant${objects.indexOf(v) + 1}`);
        }),
      );
    }
    if ('const' in s) return `Literal[${literal(s.const)}]`;
    if (Array.isArray(s.enum)) {
      const values = s.enum as unknown[];
      const named = values.filter((v) => v !== null);
      return union([
        ...(named.length ? [`Literal[${named.map(literal).join(', ')}]`] : []),
        ...(named.length < values.length ? ['None'] : []),
      ]);
    }
    if (Array.isArray(s.type)) return union((s.type as string[]).map((t) => this.type({ ...s, type: t }, hint)));
    switch (s.type) {
      case 'string':
        return 'str';
      case 'integer':
        return 'int';
      case 'number':
        // A JSON number keeps what it was in an answer (`29`, not `29.0`); any number is accepted as input.
        return this.kind === 'model' ? 'int | float' : 'float';
      case 'boolean':
        return 'bool';
      case 'null':
        return 'None';
      case 'array': {
        const item = this.type(s.items as Schema | undefined, hint);
        return this.kind === 'model' ? `list[${item}]` : `Sequence[${item}]`;
      }
      case 'object':
      case undefined:
        if (isObject(s)) return this.objectClass(s, hint);
        return this.record(s, hint);
      default:
        throw new Error(`python SDK: no Python type for ${JSON.stringify(s).slice(0, 200)}`);
    }
  }

  /** The fields of an object schema, typed (nested objects named after their parent). */
  fields(s: Schema, parent: string, reserved: ReadonlySet<string> = new Set()): PyField[] {
    const required = new Set((s.required as string[]) ?? []);
    const base = parent.replace(/(Response|Body|Param)$/, '');
    return Object.entries((s.properties as Record<string, Schema>) ?? {}).map(([key, ps]) => {
      const items = ps.type === 'array' || (Array.isArray(ps.type) && ps.type.includes('array'));
      const hint = base + (items ? singular(key) : pascal(key));
      return {
        key,
        name: pyName(key, reserved),
        type: this.type(ps, hint),
        required: required.has(key),
        description: describe(ps),
      };
    });
  }

  private record(s: Schema, hint: string): string {
    const extra = s.additionalProperties;
    const value = extra && typeof extra === 'object' ? this.type(extra as Schema, `${hint}Value`) : 'Any';
    return this.kind === 'model' ? `dict[str, ${value}]` : `Mapping[str, ${value}]`;
  }

  private claim(hint: string): string {
    const base = pascal(hint) + (this.kind === 'param' ? 'Param' : '');
    let name = base;
    for (let i = 2; this.taken.has(name); i++) name = `${base}${i}`;
    this.taken.add(name);
    return name;
  }

  /**
   * Gives an object schema its name before any class is written, so the shape has that name wherever it turns up
   * first (an account's `subscription` is a `Subscription`). Returns false when the shape already has a name.
   */
  reserve(s: Schema, name: string): boolean {
    if (!isObject(s)) return false;
    const shape = shapeKey({ ...s, description: undefined });
    if (this.byShape.has(shape)) return false;
    if (this.taken.has(name)) throw new Error(`python SDK: the name ${name} is taken`);
    this.taken.add(name);
    this.byShape.set(shape, name);
    this.reserved.add(shape);
    return true;
  }

  private objectClass(s: Schema, hint: string): string {
    const shape = shapeKey({ ...s, description: undefined });
    const known = this.byShape.get(shape);
    if (known && !this.reserved.has(shape)) return known;
    this.reserved.delete(shape);
    const name = known ?? this.claim(hint);
    this.byShape.set(shape, name);
    const reserved = this.kind === 'model' ? new Set([...MODEL_ATTRIBUTES, ...ANNOTATION_NAMES]) : ANNOTATION_NAMES;
    const fields = this.fields(s, name, reserved).map((f) =>
      this.kind === 'param' ? f : { ...f, name: f.name.startsWith('model_') ? `${f.name}_` : f.name },
    );
    this.blocks.push(this.kind === 'model' ? modelClass(name, s, fields) : paramClass(name, s, fields));
    this.names.push(name);
    return name;
  }
}

export function union(parts: string[]): string {
  const flat = [...new Set(parts.flatMap((p) => splitUnion(p)))];
  if (flat.includes('Any')) return 'Any';
  const none = flat.includes('None');
  return [...flat.filter((p) => p !== 'None'), ...(none ? ['None'] : [])].join(' | ');
}

/** The members of a union written `A | B` (only at the top level: `list[A | B]` is one member). */
function splitUnion(t: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === '|' && depth === 0) {
      out.push(t.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(t.slice(start).trim());
  return out;
}

export function describe(s: Schema | undefined): string | undefined {
  if (!s) return undefined;
  if (typeof s.description === 'string' && s.description.trim()) return s.description.trim();
  const variants = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  const inner = variants?.map((v) => v.description).find((d) => typeof d === 'string' && d.trim());
  return typeof inner === 'string' ? inner.trim() : undefined;
}

function modelClass(name: string, s: Schema, fields: PyField[]): string {
  const out = [`class ${name}(OfferkitModel):\n`];
  const doc = describe(s);
  if (doc) out.push(docstring(doc, '    '), '\n');
  for (const f of fields) {
    const type = f.required ? f.type : union([f.type, 'None']);
    const alias = f.name === f.key ? '' : `alias=${pyStr(f.key)}`;
    const value = f.required
      ? alias
        ? ` = Field(${alias})`
        : ''
      : alias
        ? ` = Field(default=None, ${alias})`
        : ' = None';
    out.push(`    ${f.name}: ${type}${value}\n`);
    if (f.description) out.push(docstring(f.description, '    '));
  }
  if (!fields.length) out.push('    pass\n');
  return out.join('');
}

function paramClass(name: string, s: Schema, fields: PyField[]): string {
  const doc = describe(s);
  const valid = fields.every((f) => isIdentifier(f.key) && !isKeyword(f.key) && !ANNOTATION_NAMES.has(f.key));
  const typeOf = (f: PyField) => (f.required ? f.type : `NotRequired[${f.type}]`);
  if (!valid) {
    // A key Python cannot spell as a class attribute: the functional form takes any string.
    const entries = fields.map((f) => `${pyStr(f.key)}: ${typeOf(f)}`).join(', ');
    return `${doc ? `# ${doc.replace(/\n/g, ' ')}\n` : ''}${name} = TypedDict(${pyStr(name)}, {${entries}})\n`;
  }
  const out = [`class ${name}(TypedDict):\n`];
  if (doc) out.push(docstring(doc, '    '), '\n');
  for (const f of fields) {
    // A TypedDict body holds only fields (no attribute docstrings), so each field's description is a comment.
    if (f.description) out.push(...f.description.split('\n').map((l) => `    # ${l}`.trimEnd() + '\n'));
    out.push(`    ${f.key}: ${typeOf(f)}\n`);
  }
  return out.join('');
}
