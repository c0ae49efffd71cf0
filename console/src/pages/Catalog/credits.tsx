// Credits in the catalog (issue 42): a pool's rollover, a usage entitlement's draw on a pool at a cost, and the
// words the entitlement cards use for both. The API's rules (src/catalog/catalog.service.ts `creditFields`): a pool
// takes only a rollover, a usage entitlement takes a pool and a cost together (or null to stop drawing), a boolean
// neither.
import { Group, NumberInput, Select } from '@mantine/core';
import type { Entitlement } from '../../api';
import { Hint, nameOf, names, type Catalog } from './shared';

export interface CreditsForm {
  /** A pool: keep unused plan credits up to a cap at the period end, or let them expire. */
  rollover: 'none' | 'cap';
  cap: string | number;
  /** A pool: one balance for the account, or one per registered entity (a member, a workspace). */
  per: 'account' | 'entity';
  /** A usage entitlement: the pool it draws from (null: none) and the credits one unit costs. */
  pool: string | null;
  cost: string | number;
}
export const CREDITS_EMPTY: CreditsForm = { rollover: 'none', cap: '', per: 'account', pool: null, cost: '' };
// A problem of `credits` as a whole (`credits: ...`) is no input's: the form's alert shows it.
export const CREDITS_FIELDS = ['credits.pool', 'credits.cost', 'credits.rollover', 'credits.per'] as const;

type CreditsOut = Entitlement['credits'];
const isPool = (c: CreditsOut): c is Extract<NonNullable<CreditsOut>, { rollover: unknown }> => !!c && 'rollover' in c;
const isDraw = (c: CreditsOut): c is Extract<NonNullable<CreditsOut>, { pool: string }> => !!c && 'pool' in c;

export function creditsFormOf(e: Entitlement): CreditsForm {
  const c = e.credits;
  if (isPool(c))
    return {
      ...CREDITS_EMPTY,
      rollover: c.rollover === 'none' ? 'none' : 'cap',
      cap: c.rollover === 'none' ? '' : c.rollover.cap,
      per: c.per,
    };
  if (isDraw(c)) return { ...CREDITS_EMPTY, pool: c.pool, cost: c.cost };
  return CREDITS_EMPTY;
}

/** The draw select's "no pool" (a Select value cannot be null as an option). */
const NONE = '-';

/** Whole numbers as typed (Mantine gives '' when empty); the API words a missing one. */
const num = (v: string | number) => (v === '' ? undefined : Number(v));

/**
 * The `credits` of a create or update body. A pool sends its rollover, and `per` when it differs from what the pool
 * has (the API refuses a change under balances: sent only when asked); a usage entitlement sends its pool and cost,
 * or, on an update of one that drew, null to stop drawing; anything else sends nothing.
 */
export function creditsBody(type: string, f: CreditsForm, before?: Entitlement) {
  if (type === 'credits') {
    const rollover = f.rollover === 'none' ? ('none' as const) : { cap: num(f.cap) ?? 0 };
    const was = before && isPool(before.credits) ? before.credits.per : 'account';
    return f.per === was ? { rollover } : { rollover, per: f.per };
  }
  if (type !== 'usage') return undefined;
  if (f.pool) return { pool: f.pool, cost: num(f.cost) as number };
  return before && isDraw(before.credits) ? null : undefined;
}

/** The pools of the catalog, for the draw's select. */
export const poolsOf = (c: Catalog) => c.entitlements.filter((e) => e.type === 'credits');

/** The inputs of a pool (its rollover) or of a usage entitlement (the pool it draws from and the cost). */
export function CreditsFields({
  type,
  form,
  set,
  field,
  pools,
}: {
  type: string;
  form: CreditsForm;
  set: (f: CreditsForm) => void;
  field: (name: string) => string | undefined;
  pools: Entitlement[];
}) {
  if (type === 'credits')
    return (
      <>
        <Select
          label="Unused plan credits at the period end"
          data={[
            { value: 'none', label: 'Expire' },
            { value: 'cap', label: 'Roll over, up to a cap' },
          ]}
          value={form.rollover}
          error={field('credits.rollover')}
          onChange={(v) => set({ ...form, rollover: (v ?? 'none') as CreditsForm['rollover'] })}
          allowDeselect={false}
        />
        <Select
          label="Balance kept"
          description="Per member: each entity registered under the account has its own balance (team plans)"
          data={[
            { value: 'account', label: 'One for the account' },
            { value: 'entity', label: 'One per member (entity)' },
          ]}
          value={form.per}
          error={field('credits.per')}
          onChange={(v) => set({ ...form, per: (v ?? 'account') as CreditsForm['per'] })}
          allowDeselect={false}
        />
        {form.rollover === 'cap' && (
          <NumberInput
            label="Rollover cap"
            description="The most unused plan credits the next period keeps"
            min={0}
            clampBehavior="none"
            allowDecimal={false}
            thousandSeparator=","
            required
            value={form.cap}
            onChange={(v) => set({ ...form, cap: v })}
          />
        )}
        <Hint>A plan grants its limit on this pool each month (set it in the grid above; empty: unlimited).</Hint>
      </>
    );
  if (type !== 'usage') return null;
  return (
    <Group gap="xs" align="flex-start" grow>
      <Select
        label="Draws credits from"
        data={[
          // An option rather than a clear button: Mantine's is out of the keyboard's reach.
          { value: NONE, label: pools.length ? 'None: draws no credits' : 'None (no credits pool yet)' },
          ...pools.map((p) => ({ value: p.id, label: p.name })),
        ]}
        value={form.pool ?? NONE}
        error={field('credits.pool')}
        onChange={(v) => {
          const pool = v && v !== NONE ? v : null;
          set({ ...form, pool, cost: pool && form.cost === '' ? 1 : form.cost });
        }}
        allowDeselect={false}
      />
      {form.pool && (
        <NumberInput
          label="Credits per unit"
          min={1}
          max={1_000_000}
          clampBehavior="none"
          allowDecimal={false}
          required
          value={form.cost}
          error={field('credits.cost')}
          onChange={(v) => set({ ...form, cost: v })}
        />
      )}
    </Group>
  );
}

/** A pool's or a drawing feature's line on its card, e.g. `draws 10 AI credits a unit`. */
export function creditsText(e: Entitlement, c: Catalog): string | null {
  if (isPool(e.credits))
    return (
      (e.credits.per === 'entity' ? 'a balance per member · ' : '') +
      (e.credits.rollover === 'none'
        ? 'unused plan credits expire at the period end'
        : `keeps up to ${e.credits.rollover.cap.toLocaleString('en-US')} unused plan credits`)
    );
  if (isDraw(e.credits))
    return `draws ${e.credits.cost.toLocaleString('en-US')} ${nameOf(c.entitlements, e.credits.pool)} a unit`;
  return null;
}

/** On a pool's card: the features drawing from it and what each plan grants a month. */
export function PoolUse({ pool, catalog }: { pool: Entitlement; catalog: Catalog }) {
  const drawing = catalog.entitlements.filter((e) => isDraw(e.credits) && e.credits.pool === pool.id);
  const grants = catalog.plans
    .map((p) => ({ plan: p.name, max: p.entitlements.find((x) => x.id === pool.id)?.max }))
    .filter((g) => g.max !== undefined)
    .map((g) => `${g.plan} ${g.max === null ? 'unlimited' : `${g.max!.toLocaleString('en-US')} a month`}`);
  return (
    <>
      <Hint>
        Drawn by: {names(drawing.map((e) => `${e.name} (${isDraw(e.credits) ? e.credits.cost : ''} a unit)`))}
      </Hint>
      <Hint>Granted by plans: {names(grants)}</Hint>
    </>
  );
}
