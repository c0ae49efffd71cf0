// Plans: create, edit every field the API has (name, description, note, free flag, pricing card, meta, private
// meta keys) and delete, the confirmation naming what depends on the plan.
import {
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  NumberInput,
  SimpleGrid,
  Stack,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import type { PlansUpdateBody } from '@offerkit/sdk';
import type { Plan } from '../../api';
import { plural } from '../../plural';
import { ConfirmDialog, ErrorText, useAction } from '../../ui';
import {
  EditDialog,
  Hint,
  nameOf,
  names,
  numOrUndefined,
  offersUsing,
  orNull,
  RowActions,
  deleteRefusal,
  type SectionProps,
} from './shared';

type PricingCardBody = NonNullable<PlansUpdateBody['pricingCard']>;
type PlanMeta = NonNullable<PlansUpdateBody['meta']>;

interface PlanForm {
  id: string;
  name: string;
  description: string;
  note: string;
  isFree: boolean;
  hasCard: boolean;
  title: string;
  monthlyPrice: string | number;
  yearlyPrice: string | number;
  currency: string;
  cardFree: boolean;
  meta: string;
  privateMetaKeys: string;
}

const EMPTY: PlanForm = {
  id: '',
  name: '',
  description: '',
  note: '',
  isFree: false,
  hasCard: false,
  title: '',
  monthlyPrice: '',
  yearlyPrice: '',
  currency: 'USD',
  cardFree: false,
  meta: '',
  privateMetaKeys: '',
};

function formOf(p: Plan): PlanForm {
  const card = p.pricingCard;
  return {
    id: p.id,
    name: p.name,
    description: p.description ?? '',
    note: p.note ?? '',
    isFree: p.isFree,
    hasCard: !!card,
    // The API shows the plan name as the title of a card without one: kept empty so a rename follows.
    title: card && card.title !== p.name ? card.title : '',
    monthlyPrice: card?.monthlyPrice ?? '',
    yearlyPrice: card?.yearlyPrice ?? '',
    currency: card?.currency ?? 'USD',
    cardFree: card?.isFree ?? false,
    meta: Object.keys(p.meta ?? {}).length ? JSON.stringify(p.meta, null, 2) : '',
    privateMetaKeys: p.privateMetaKeys.join(', '),
  };
}

/** The body of a create or update; a problem with what was typed is thrown worded as the API words one. */
function bodyOf(f: PlanForm, before?: Plan) {
  let meta: PlanMeta = {};
  if (f.meta.trim()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(f.meta);
    } catch {
      throw new Error('meta: must be valid JSON, e.g. {"color": "blue"}');
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('meta: must be a JSON object, e.g. {"color": "blue"}');
    meta = parsed as PlanMeta;
  }
  // Keys of the card the console has no input for are kept as they were; an emptied input removes its key.
  const { plan_id: _id, ...rest } = (before?.pricingCard ?? {}) as Record<string, unknown>;
  const typed: Record<string, unknown> = {
    title: f.title.trim() || undefined,
    monthlyPrice: numOrUndefined(f.monthlyPrice),
    yearlyPrice: numOrUndefined(f.yearlyPrice),
    currency: f.currency.trim() || undefined,
    isFree: f.cardFree,
  };
  const card = { ...rest };
  for (const [k, v] of Object.entries(typed)) {
    if (v === undefined) delete card[k];
    else card[k] = v;
  }
  const pricingCard = f.hasCard ? (card as PricingCardBody) : before ? null : undefined;
  return {
    name: f.name,
    description: orNull(f.description),
    note: orNull(f.note),
    isFree: f.isFree,
    pricingCard,
    meta,
    privateMetaKeys: f.privateMetaKeys
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean),
  };
}

const PLAN_FIELDS = [
  'id',
  'name',
  'description',
  'note',
  'isFree',
  'pricingCard.title',
  'pricingCard.monthlyPrice',
  'pricingCard.yearlyPrice',
  'pricingCard.currency',
  'pricingCard.isFree',
  'meta',
  'privateMetaKeys',
] as const;

/** The inputs of a plan, for a new one (with its id) or an existing one. */
function PlanFields({
  form,
  set,
  field,
  isNew,
}: {
  form: PlanForm;
  set: (f: PlanForm) => void;
  field: (name: string) => string | undefined;
  isNew: boolean;
}) {
  const text = (k: keyof PlanForm) => (e: { currentTarget: { value: string } }) =>
    set({ ...form, [k]: e.currentTarget.value });
  return (
    <Stack gap="xs">
      {isNew && (
        <TextInput
          label="Plan id"
          description="Lowercase, used in code"
          required
          value={form.id}
          error={field('id')}
          onChange={text('id')}
        />
      )}
      <TextInput label="Plan name" required value={form.name} error={field('name')} onChange={text('name')} />
      <Textarea
        label="Plan description"
        description="Buyers may see it"
        autosize
        minRows={1}
        value={form.description}
        error={field('description')}
        onChange={text('description')}
      />
      <Checkbox
        label="Free plan: accounts created without a plan get this one"
        checked={form.isFree}
        error={field('isFree')}
        onChange={(e) => set({ ...form, isFree: e.currentTarget.checked })}
      />
      <Checkbox
        label="Has a pricing card (shown in the pricing table, can be bought)"
        checked={form.hasCard}
        onChange={(e) => set({ ...form, hasCard: e.currentTarget.checked })}
      />
      {form.hasCard && (
        <Card withBorder p="xs">
          <Stack gap="xs">
            <TextInput
              label="Card title"
              placeholder={form.name || 'The plan name'}
              value={form.title}
              error={field('pricingCard.title')}
              onChange={text('title')}
            />
            <Group grow preventGrowOverflow={false} wrap="wrap" align="flex-start">
              <NumberInput
                label="Monthly price"
                min={0}
                decimalScale={2}
                miw={120}
                value={form.monthlyPrice}
                error={field('pricingCard.monthlyPrice')}
                onChange={(v) => set({ ...form, monthlyPrice: v })}
              />
              <NumberInput
                label="Yearly price"
                min={0}
                decimalScale={2}
                miw={120}
                value={form.yearlyPrice}
                error={field('pricingCard.yearlyPrice')}
                onChange={(v) => set({ ...form, yearlyPrice: v })}
              />
              <TextInput
                label="Currency"
                miw={90}
                maxLength={8}
                value={form.currency}
                error={field('pricingCard.currency')}
                onChange={text('currency')}
              />
            </Group>
            {!isNew && (
              <Text size="xs" c="dimmed">
                A new price applies from now on: to checkouts at regular prices, to upgrades from a limit without an
                offer, and as the price offers show crossed out. Current subscribers keep what they pay, and offers keep
                their own prices.
              </Text>
            )}
            <Checkbox
              label="Shown as free on the card"
              checked={form.cardFree}
              error={field('pricingCard.isFree')}
              onChange={(e) => set({ ...form, cardFree: e.currentTarget.checked })}
            />
          </Stack>
        </Card>
      )}
      <Textarea
        label="Internal note"
        description="Never shown to buyers"
        autosize
        minRows={1}
        value={form.note}
        error={field('note')}
        onChange={text('note')}
      />
      <Textarea
        label="Meta (JSON)"
        description='Free-form keys read with the plan, e.g. {"color": "blue"}'
        autosize
        minRows={2}
        styles={{ input: { fontFamily: 'monospace' } }}
        value={form.meta}
        error={field('meta')}
        onChange={text('meta')}
      />
      <TextInput
        label="Private meta keys"
        description="Comma-separated meta keys hidden from the publishable key"
        value={form.privateMetaKeys}
        error={field('privateMetaKeys')}
        onChange={text('privateMetaKeys')}
      />
    </Stack>
  );
}

export function NewPlan({ api, reload }: Pick<SectionProps, 'api' | 'reload'>) {
  const [form, setForm] = useState<PlanForm>(EMPTY);
  const action = useAction(PLAN_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await action.run(() => api.plans.create({ id: form.id, ...bodyOf(form) }))) {
      setForm(EMPTY);
      await reload();
    }
  };
  return (
    <Card withBorder miw={260}>
      <form onSubmit={submit} aria-label="New plan">
        <Stack gap="xs">
          <Title order={3} size="h5">
            New plan
          </Title>
          <PlanFields form={form} set={setForm} field={action.field} isNew />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="plans.create">
            Add plan
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function EditPlan({ api, plan, onDone }: { api: SectionProps['api']; plan: Plan; onDone: () => Promise<void> }) {
  const [form, setForm] = useState<PlanForm>(() => formOf(plan));
  const action = useAction(PLAN_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await action.run(() => api.plans.update(plan.id, bodyOf(form, plan)))) await onDone();
  };
  return (
    <form onSubmit={submit}>
      <Stack gap="xs">
        <PlanFields form={form} set={setForm} field={action.field} isNew={false} />
        <ErrorText error={action.error} />
        <Button type="submit" w="fit-content" loading={action.busy} data-route="plans.update">
          Save plan
        </Button>
      </Stack>
    </form>
  );
}

function price(p: Plan): string {
  const c = p.pricingCard;
  if (!c) return 'No pricing card: not for sale';
  if (c.isFree) return 'Free';
  const parts = [
    c.monthlyPrice !== undefined ? `${c.monthlyPrice} ${c.currency ?? 'USD'}/month` : null,
    c.yearlyPrice !== undefined ? `${c.yearlyPrice} ${c.currency ?? 'USD'}/year` : null,
  ].filter(Boolean);
  return parts.join(' · ') || 'Pricing card without a price';
}

/** What deleting a plan does: accounts on it or a live offer selling it stop it (409); its limits and add-on links go with it. */
function DeletePlan({ plan, props, onClose }: { plan: Plan; props: SectionProps; onClose: () => void }) {
  const { api, catalog, reload } = props;
  // undefined while counting; null when the count could not be read (the API still refuses if any are on it).
  const [accounts, setAccounts] = useState<number | null | undefined>(undefined);
  useEffect(() => {
    api.plans.listAccounts(plan.id, { per_page: 1 }).then(
      (p) => setAccounts(p.total),
      () => setAccounts(null),
    );
  }, [api, plan.id]);
  const sells = (o: (typeof catalog.offers)[number]) => o.plans.some((p) => p.plan === plan.id);
  const live = offersUsing(catalog.offers, (o) => o.status === 'active' && sells(o));
  const others = offersUsing(catalog.offers, (o) => o.status !== 'active' && sells(o));
  // What the API would refuse, said before the click: the delete button stays disabled with the reason by it.
  const refusals = [
    accounts ? `${plural(accounts, 'account')} on it` : null,
    live.length ? `${plural(live.length, 'live offer')} selling it` : null,
  ]
    .filter(Boolean)
    .join(' and ');
  const blocked =
    accounts === undefined
      ? 'Counting the accounts on it…'
      : refusals
        ? `Cannot delete it while it has ${refusals}.`
        : null;
  return (
    <ConfirmDialog
      opened
      blocked={blocked}
      title={`Delete plan ${plan.name}?`}
      confirmLabel={`Delete plan ${plan.name}`}
      onClose={onClose}
      onConfirm={async () => (await api.plans.delete(plan.id), await reload())}
    >
      <Text size="sm">
        Plan <strong>{plan.name}</strong> (<code>{plan.id}</code>) is deleted for good.
      </Text>
      <Text size="sm">
        Accounts on it: <strong>{accounts === undefined ? '…' : (accounts ?? 'unknown')}</strong>
        {accounts ? ' — the API refuses while any account is on it: move them to another plan first.' : ''}
      </Text>
      <Text size="sm">
        Live offers selling it: <strong>{names(live)}</strong>
        {live.length
          ? ' — the API refuses while a live offer sells it: take the plan out of them or archive them.'
          : ''}
      </Text>
      {others.length > 0 && (
        <Text size="sm">
          Draft and archived offers listing it: <strong>{names(others)}</strong> — a draft cannot be published until the
          plan is taken out of it.
        </Text>
      )}
      <Text size="sm">
        Removed with it: its limits ({names(plan.entitlements.map((e) => nameOf(catalog.entitlements, e.id)))}) and
        add-ons ({names(plan.addons.map((a) => nameOf(catalog.addons, a)))}).
      </Text>
    </ConfirmDialog>
  );
}

export function Plans(props: SectionProps) {
  const { api, catalog, reload } = props;
  const [editing, setEditing] = useState<Plan | null>(null);
  const [deleting, setDeleting] = useState<Plan | null>(null);
  return (
    <Stack gap="xs">
      <Title order={3} size="h4" id="plans">
        Plans
      </Title>
      {catalog.plans.length === 0 && <Hint>No plans yet.</Hint>}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} style={{ alignItems: 'start' }}>
        {catalog.plans.map((p) => (
          <Card component="section" withBorder key={p.id} aria-label={`Plan ${p.name}`}>
            <Group justify="space-between" wrap="nowrap" align="flex-start">
              <div>
                <Text fw={600}>
                  {p.name} {p.isFree && <Badge size="xs">free plan</Badge>}
                </Text>
                <Text size="xs" c="dimmed">
                  <code>{p.id}</code> · {price(p)}
                </Text>
              </div>
              {props.canEdit && (
                <RowActions
                  kind="plans"
                  blocked={deleteRefusal('plans', p.id, catalog)}
                  label={`plan ${p.name}`}
                  onEdit={() => setEditing(p)}
                  onDelete={() => setDeleting(p)}
                />
              )}
            </Group>
            {p.description && <Text size="sm">{p.description}</Text>}
            {p.note && <Hint>Note: {p.note}</Hint>}
            <Hint>
              Grants:{' '}
              {names([
                ...p.entitlements.map((e) => {
                  const ent = catalog.entitlements.find((x) => x.id === e.id);
                  const name = ent?.name ?? e.id;
                  return ent?.type === 'boolean' ? name : `${name} ${e.max ?? 'unlimited'}`;
                }),
                ...p.addons.map((a) => nameOf(catalog.addons, a)),
              ])}
            </Hint>
          </Card>
        ))}
        {props.canEdit && <NewPlan api={api} reload={reload} />}
      </SimpleGrid>
      {editing && (
        <EditDialog opened title={`Edit plan ${editing.name}`} onClose={() => setEditing(null)}>
          <EditPlan api={api} plan={editing} onDone={async () => (await reload(), setEditing(null))} />
        </EditDialog>
      )}
      {deleting && <DeletePlan plan={deleting} props={props} onClose={() => setDeleting(null)} />}
    </Stack>
  );
}
