// Requests built from the published document alone (issue 39, item 4): a valid sample of a JSON Schema, and for each
// rule the schema states (type, required, length, pattern, format, enum, bounds, item counts, uniqueness, oneOf) one
// value that breaks that rule and nothing else the schema says. test/api/contract-rules.test.ts sends them and expects
// the documented 400 naming the field: a rule the document states that the server does not enforce fails there, and
// so does a rule the server enforces beyond the document on an otherwise valid sample.

export type Schema = Record<string, any>;

/** One broken request part: the whole value with one rule broken, where (field path) and which rule. */
export interface Breach {
  value: unknown;
  path: (string | number)[];
  rule: string;
}

const NULL_TYPE = (s: Schema) => s.type === 'null';

export class SchemaCases {
  constructor(
    private readonly components: Record<string, Schema>,
    /** Values every string with no other hint may take (an existing app's id for `app_...`). */
    private readonly strings: readonly string[],
  ) {}

  private deref(s: Schema): Schema {
    return s.$ref ? this.deref(this.components[String(s.$ref).split('/').pop()!]) : s;
  }

  /** The schema behind a `$ref`, a nullable `anyOf`, or a type list with `null`; null for real unions. */
  resolve(s: Schema): Schema | null {
    if (s.$ref) return this.resolve(this.components[String(s.$ref).split('/').pop()!]);
    const branches = (s.anyOf ?? (s.oneOf && !s.type && !s.properties ? s.oneOf : null)) as Schema[] | null;
    if (branches) {
      const real = branches.filter((b) => !NULL_TYPE(b));
      return real.length === 1 ? this.resolve({ ...s, anyOf: undefined, oneOf: undefined, ...real[0] }) : null;
    }
    if (Array.isArray(s.type)) {
      const types = (s.type as string[]).filter((t) => t !== 'null');
      return types.length === 1 ? { ...s, type: types[0] } : null;
    }
    return s;
  }

  private stringOk(s: Schema, v: string): boolean {
    const len = [...v].length;
    if (s.minLength !== undefined && len < s.minLength) return false;
    if (s.maxLength !== undefined && len > s.maxLength) return false;
    if (s.pattern && !new RegExp(s.pattern, 'u').test(v)) return false;
    if (s.format === 'date-time' && Number.isNaN(Date.parse(v))) return false;
    if (s.format === 'email' && !v.includes('@')) return false;
    if (s.format === 'uri' && !URL.canParse(v)) return false;
    return true;
  }

  /** A value the schema accepts; throws when it cannot make one (the test then names the schema to extend this). */
  sample(given: Schema, where = 'body'): unknown {
    const schema = this.deref(given);
    const s = this.resolve(schema);
    if (!s) {
      // A union: its first branch that is not null.
      const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
      if (branches)
        return this.sample(
          branches.find((b) => !NULL_TYPE(b))!,
          where,
        );
      return this.sample({ ...schema, type: (schema.type as string[]).find((t) => t !== 'null') }, where);
    }
    if (s.const !== undefined) return s.const;
    if (s.enum) return s.enum[0];
    if (s.allOf) return Object.assign({}, ...s.allOf.map((p: Schema) => this.sample(p, where)));
    switch (s.type) {
      case 'object': {
        const out: Record<string, unknown> = {};
        const required = new Set<string>([...(s.required ?? []), ...(s.oneOf?.[0]?.required ?? [])]);
        for (const key of required) out[key] = this.sample(s.properties?.[key] ?? {}, `${where}.${key}`);
        return out;
      }
      case 'array': {
        const item = s.contains ? this.sample({ ...s.items, ...s.contains }, `${where}[]`) : undefined;
        const n = Math.max(s.minItems ?? 0, item === undefined ? 1 : 0);
        const items = Array.from({ length: n }, (_, i) => this.distinct(s.items ?? {}, i, `${where}[]`));
        return item === undefined ? items : [...items, item];
      }
      case 'integer':
      case 'number': {
        const low = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
        return s.maximum !== undefined ? Math.min(low, s.maximum) : low;
      }
      case 'boolean':
        return true;
      case 'string': {
        const found = this.stringCandidates(s).find((v) => this.stringOk(s, v));
        if (found === undefined) throw new Error(`no sample for ${where}: ${JSON.stringify(s)}`);
        return found;
      }
      default:
        // No type stated (JsonValue and the like): any JSON value.
        return 'sample';
    }
  }

  /** Array items for uniqueItems lists: the i-th distinct sample where the schema allows it. */
  private distinct(items: Schema, i: number, where: string): unknown {
    const s = this.resolve(items);
    if (s?.enum && i < s.enum.length) return s.enum[i];
    const v = this.sample(items, where);
    if (typeof v === 'string' && i > 0 && s && this.stringOk(s, `${v}${i}`)) return `${v}${i}`;
    return v;
  }

  private stringCandidates(s: Schema): string[] {
    if (s.format === 'date-time' || /T\(\?:/.test(s.pattern ?? '')) return ['2026-11-01T12:00:00Z'];
    if (s.format === 'email' || /@/.test(s.pattern ?? '')) return ['someone@example.com'];
    if (s.format === 'uri' || /https\?/.test(s.pattern ?? '')) return ['https://example.com/hook'];
    const min = s.minLength ?? 0;
    // Digits carried in a string (a big integer, as the credits amounts are).
    return [...this.strings, 'sample', 'USD', 'x'.repeat(Math.max(min, 1)), 'a1', '1'];
  }

  /** Values that break a string's rules, each kept only where it breaks that rule alone. */
  private stringBreaches(s: Schema): [string, unknown][] {
    const out: [string, unknown][] = [];
    const sample = this.sample(s) as string;
    const only = (rule: string, v: string, ok: (t: Schema) => boolean) => {
      // The value must break this rule and meet every other one the schema states.
      if (!ok(s) && this.stringOk({ ...s, [rule]: undefined }, v)) out.push([rule, v]);
    };
    if (s.minLength !== undefined && s.minLength > 0) {
      const v = sample.slice(0, s.minLength - 1);
      only('minLength', v, (t) => this.stringOk(t, v));
    }
    if (s.maxLength !== undefined && s.maxLength < 100_000) {
      const pad = /^[A-Za-z0-9]/.test(sample.at(-1) ?? '') ? sample.at(-1)! : 'a';
      const v = sample + pad.repeat(s.maxLength + 1 - [...sample].length);
      only('maxLength', v, (t) => this.stringOk(t, v));
    }
    if (s.pattern) {
      const bad = ['!!!', '   ', 'a\u202eb', 'US1', '2026-02-30T00:00:00Z', 'ftp://example.com', 'not-an-address'];
      const v = bad.find((b) => !new RegExp(s.pattern, 'u').test(b) && this.stringOk({ ...s, pattern: undefined }, b));
      if (v !== undefined) out.push(['pattern', v]);
    }
    if (s.format === 'date-time') out.push(['format', '2026-13-01 noon']);
    if (s.format === 'email') out.push(['format', 'not-an-address']);
    if (s.enum) out.push(['enum', 'not_one_of_them']);
    return out;
  }

  /** Each rule `schema` states about `base` (a valid value), broken once. */
  *breaches(schema: Schema, base: unknown, path: (string | number)[] = []): Generator<Breach> {
    const s = this.resolve(schema);
    if (!s) return;
    if (s.const !== undefined) {
      yield { value: `${String(s.const)}_not`, path, rule: 'const' };
      return;
    }
    const wrongType: Record<string, unknown> = {
      string: 12345,
      integer: 'twelve',
      number: 'twelve',
      boolean: 'yes',
      object: 'an object',
      array: 'a list',
    };
    if (s.type in wrongType && !s.enum) yield { value: wrongType[s.type], path, rule: 'type' };
    if (s.type === 'string') {
      for (const [rule, value] of this.stringBreaches(s)) yield { value, path, rule };
    } else if (s.type === 'integer' || s.type === 'number') {
      if (s.type === 'integer') yield { value: Number(base) + 0.5, path, rule: 'integer' };
      if (s.minimum !== undefined) yield { value: s.minimum - 1, path, rule: 'minimum' };
      if (s.exclusiveMinimum !== undefined) yield { value: s.exclusiveMinimum, path, rule: 'exclusiveMinimum' };
      if (s.maximum !== undefined) yield { value: s.maximum + 1, path, rule: 'maximum' };
    } else if (s.type === 'array' && Array.isArray(base)) {
      if (s.minItems) yield { value: base.slice(0, s.minItems - 1), path, rule: 'minItems' };
      if (s.maxItems !== undefined) {
        const fill = Array.from({ length: s.maxItems + 1 }, (_, i) => this.distinct(s.items ?? {}, i, 'item'));
        yield { value: fill, path, rule: 'maxItems' };
      }
      if (s.uniqueItems && base.length) yield { value: [base[0], ...base], path, rule: 'uniqueItems' };
      if (s.items && base.length)
        for (const b of this.breaches(s.items, base[0], [...path, 0]))
          yield { ...b, value: [b.value, ...base.slice(1)] };
    } else if (s.type === 'object' && base && typeof base === 'object') {
      const obj = base as Record<string, unknown>;
      for (const key of s.required ?? []) {
        const { [key]: _dropped, ...rest } = obj;
        yield { value: rest, path: [...path, key], rule: 'required' };
      }
      if (s.oneOf?.length > 1) {
        const both = Object.assign({}, obj);
        for (const branch of s.oneOf as Schema[])
          for (const key of branch.required ?? []) both[key] ??= this.sample(s.properties[key]);
        yield { value: both, path, rule: 'oneOf' };
      }
      for (const [key, prop] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
        // An optional field is given only here; a field a oneOf branch or a dependency ties to others is left alone.
        if (s.oneOf?.some((b: Schema) => b.required?.includes(key)) && !(key in obj)) continue;
        if (s.dependentSchemas?.[key] && !(key in obj)) continue;
        let child: unknown;
        try {
          child = key in obj ? obj[key] : this.sample(prop);
        } catch {
          continue;
        }
        for (const b of this.breaches(prop, child, [...path, key])) yield { ...b, value: { ...obj, [key]: b.value } };
      }
    }
  }
}
