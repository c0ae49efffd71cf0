// The offer editor: name and description, the plans it sells (prices per interval and currency, extras), order
// bumps, schedule and fallback, with a live preview of what a buyer sees (draft-preview validates the unsaved
// fields like a create and stores nothing, so its errors are the API's own words), save, publish and archive.
import {
  ActionIcon,
  Alert,
  Box,
  Badge,
  Button,
  Card,
  CloseButton,
  Fieldset,
  Group,
  MultiSelect,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Textarea,
  Title,
} from '@mantine/core';
import type {
  AddonsListResponse,
  EntitlementsListResponse,
  OffersCreateBody,
  OffersGetResponse,
  OffersListResponse,
  OffersPreviewDraftResponse,
  PlansListResponse,
} from '@offerkit/sdk';
import { useEffect, useState } from 'react';
import type { AppApi } from '../api';
import { isoFromLocal, localInput, num, orNull, type Num } from '../forms';
import { ErrorText, useAction } from '../ui';

type Offer = OffersGetResponse;
type CatalogPlan = PlansListResponse[number];
type Interval = 'month' | 'year';

export interface OfferCatalog {
  plans: PlansListResponse;
  entitlements: EntitlementsListResponse;
  addons: AddonsListResponse;
  offers: OffersListResponse;
}

interface PriceForm {
  interval: Interval;
  amount: Num;
  currency: string;
  /** Cycles at the offer price before the regular price; blank: the offer price for as long as subscribed. */
  cycles: Num;
}
interface PlanForm {
  plan: string;
  prices: PriceForm[];
  /** Entitlement overrides (max blank: unlimited), add-ons, and how many cycles the extras last (blank: always). */
  extras: { entitlements: { id: string; max: Num }[]; addons: string[]; cycles: Num };
}
interface BumpForm {
  id: string;
  name: string;
  addon: string;
  price: Num;
  currency: string;
}
interface OfferForm {
  name: string;
  description: string;
  plans: PlanForm[];
  bumps: BumpForm[];
  fallback: string | null;
  starts_at: string;
  expires_at: string;
}

export const STATUS_COLORS: Record<string, string> = {
  draft: 'gray',
  scheduled: 'blue',
  active: 'teal',
  expired: 'orange',
  archived: 'dark',
};

const numOr = (v: number | null | undefined): Num => (typeof v === 'number' ? v : '');

function formOf(o: Offer): OfferForm {
  return {
    name: o.name,
    description: o.description ?? '',
    plans: o.plans.map((p) => ({
      plan: p.plan,
      prices: p.prices.map((x) => ({
        interval: x.interval,
        amount: x.amount,
        currency: x.currency,
        cycles: numOr(x.cycles),
      })),
      extras: {
        entitlements: p.extras.entitlements.map((e) => ({ id: e.id, max: numOr(e.max) })),
        addons: p.extras.addons,
        cycles: numOr(p.extras.cycles),
      },
    })),
    bumps: o.bumps.map((b) => ({ ...b })),
    fallback: o.fallback,
    starts_at: localInput(o.starts_at),
    expires_at: localInput(o.expires_at),
  };
}

/**
 * The form as the API takes it. A blank required number is left out, so the API names it (`plans.1.prices.0.amount:
 * is required`) rather than the console guessing a value.
 */
function bodyOf(f: OfferForm, saved: Offer): Omit<OffersCreateBody, 'id' | 'account_id'> {
  // A time the person left alone keeps its stored value (the input shows minutes only).
  const time = (local: string, stored: string | null) => (local === localInput(stored) ? stored : isoFromLocal(local));
  return {
    name: f.name,
    description: f.description || null,
    plans: f.plans.map((p) => ({
      plan: p.plan,
      prices: p.prices.map((x) => ({
        interval: x.interval,
        ...(x.amount === '' ? {} : { amount: x.amount }),
        currency: x.currency,
        cycles: orNull(x.cycles),
      })) as OffersCreateBody['plans'][number]['prices'],
      extras: {
        entitlements: p.extras.entitlements.map((e) => ({ id: e.id, max: orNull(e.max) })),
        addons: p.extras.addons,
        cycles: orNull(p.extras.cycles),
      },
    })),
    bumps: f.bumps.map((b) => ({
      id: b.id,
      name: b.name,
      addon: b.addon,
      ...(b.price === '' ? {} : { price: b.price }),
      currency: b.currency,
    })) as OffersCreateBody['bumps'],
    fallback: f.fallback,
    starts_at: time(f.starts_at, saved.starts_at),
    expires_at: time(f.expires_at, saved.expires_at),
  };
}

/** The plan's regular prices from its pricing card, as offer prices to start from. */
function regularPrices(plan: CatalogPlan | undefined, fallbackCurrency: string): PriceForm[] {
  const card = plan?.pricingCard;
  const currency = (card?.currency ?? fallbackCurrency).toUpperCase();
  const prices: PriceForm[] = [];
  if (typeof card?.monthlyPrice === 'number')
    prices.push({ interval: 'month', amount: card.monthlyPrice, currency, cycles: '' });
  if (typeof card?.yearlyPrice === 'number')
    prices.push({ interval: 'year', amount: card.yearlyPrice, currency, cycles: '' });
  return prices.length ? prices : [{ interval: 'month', amount: '', currency, cycles: '' }];
}

/** The regular price for an interval and currency, as the API compares them (none when the card lacks it). */
function listPrice(plan: CatalogPlan | undefined, interval: Interval, currency: string): number | null {
  const card = plan?.pricingCard;
  if (!card || (card.currency ?? 'USD').toUpperCase() !== currency.toUpperCase()) return null;
  const v = interval === 'month' ? card.monthlyPrice : card.yearlyPrice;
  return typeof v === 'number' ? v : null;
}

const intervalWord = (i: Interval) => (i === 'month' ? 'monthly' : 'yearly');

export function OfferEditor({
  api,
  offer,
  catalog,
  onSaved,
  readOnly = false,
}: {
  api: AppApi;
  offer: Offer;
  catalog: OfferCatalog;
  onSaved: () => Promise<void>;
  /** The demo workspace: edits still show in the preview, and nothing offers to save them (the API would 403). */
  readOnly?: boolean;
}) {
  const [form, setForm] = useState<OfferForm>(() => formOf(offer));
  const [preview, setPreview] = useState<OffersPreviewDraftResponse | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const action = useAction();
  const body = bodyOf(form, offer);
  const dirty = JSON.stringify(body) !== JSON.stringify(bodyOf(formOf(offer), offer));
  const archived = offer.status === 'archived';
  const currency = form.plans[0]?.prices[0]?.currency ?? form.bumps[0]?.currency ?? 'USD';
  // A preview validates like a create, so it names the offer as shareable (its id) or targeted (its account).
  const key = JSON.stringify({
    ...body,
    ...(offer.kind === 'targeted' ? { account_id: offer.account_id } : { id: offer.id }),
  });
  // The live preview: what a buyer would see with the unsaved fields, a moment after the last change.
  useEffect(() => {
    let current = true;
    const t = setTimeout(() => {
      api.offers.previewDraft(JSON.parse(key) as OffersCreateBody).then(
        (p) => current && (setPreview(p), setPreviewError(null)),
        (e: Error) => current && setPreviewError(e.message),
      );
    }, 300);
    return () => {
      current = false;
      clearTimeout(t);
    };
  }, [api, key]);

  const setPlan = (i: number, patch: Partial<PlanForm>) =>
    setForm((f) => ({ ...f, plans: f.plans.map((p, j) => (j === i ? { ...p, ...patch } : p)) }));
  const movePlan = (i: number, by: -1 | 1) =>
    setForm((f) => {
      const plans = [...f.plans];
      [plans[i], plans[i + by]] = [plans[i + by], plans[i]];
      return { ...f, plans };
    });
  const save = () => api.offers.update(offer.id, body);

  return (
    <SimpleGrid cols={{ base: 1, md: 2 }}>
      <Card withBorder>
        <Stack gap="sm">
          <Group justify="space-between" wrap="nowrap" align="flex-start">
            <Title order={3} size="h4" style={{ overflowWrap: 'anywhere' }}>
              {offer.name}
            </Title>
            <Group gap={6} wrap="nowrap">
              {dirty && (
                <Badge color="yellow" variant="light">
                  unsaved
                </Badge>
              )}
              <Badge color={STATUS_COLORS[offer.live_status]} aria-label="Offer status">
                {offer.live_status}
              </Badge>
            </Group>
          </Group>
          {offer.status === 'active' && (
            <Text size="sm" c="dimmed">
              Live: saved changes apply to future purchases only; buyers keep the price and extras they bought.
            </Text>
          )}
          {archived && (
            <Alert color="gray" title="Archived">
              This offer sells no more and cannot be published again; buyers keep their terms. Create a new offer to
              sell again.
            </Alert>
          )}
          <Fieldset variant="unstyled" disabled={archived} p={0} m={0} miw={0}>
            <Stack gap="sm">
              <TextInput
                label="Name"
                value={form.name}
                onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
              />
              <Textarea
                label="Description"
                autosize
                minRows={2}
                value={form.description}
                onChange={(e) => setForm({ ...form, description: e.currentTarget.value })}
              />
              <PlansSection
                form={form}
                catalog={catalog}
                currency={currency}
                setPlan={setPlan}
                movePlan={movePlan}
                setForm={setForm}
              />
              <BumpsSection form={form} catalog={catalog} currency={currency} setForm={setForm} />
              <ScheduleSection form={form} catalog={catalog} offerId={offer.id} setForm={setForm} />
            </Stack>
          </Fieldset>
          <ErrorText error={action.error} />
          {readOnly && (
            <Group gap="xs">
              <Text size="sm" c="dimmed" role="status">
                The demo workspace is read-only: edits show in the preview and are not saved.
              </Text>
              {dirty && (
                <Button variant="default" onClick={() => setForm(formOf(offer))}>
                  Discard changes
                </Button>
              )}
            </Group>
          )}
          {!archived && !readOnly && (
            <Group gap="xs">
              <Button
                onClick={() => action.run(async () => (await save(), await onSaved()))}
                loading={action.busy}
                disabled={!dirty}
              >
                Save
              </Button>
              {dirty && (
                <Button variant="default" onClick={() => setForm(formOf(offer))} disabled={action.busy}>
                  Discard changes
                </Button>
              )}
              {offer.status === 'draft' && (
                <Button
                  color="teal"
                  disabled={action.busy}
                  onClick={() =>
                    action.run(async () => {
                      // What is published is what the person sees: unsaved edits are saved first.
                      if (dirty) await save();
                      await api.offers.publish(offer.id);
                      await onSaved();
                    })
                  }
                >
                  {dirty ? 'Save and publish' : 'Publish'}
                </Button>
              )}
              {offer.status === 'active' && (
                <Button
                  color="red"
                  variant="light"
                  disabled={action.busy}
                  onClick={() => action.run(async () => (await api.offers.archive(offer.id), await onSaved()))}
                >
                  Archive
                </Button>
              )}
            </Group>
          )}
        </Stack>
      </Card>
      <Preview preview={preview} error={previewError} catalog={catalog} />
    </SimpleGrid>
  );
}

type SetForm = React.Dispatch<React.SetStateAction<OfferForm>>;

function PlansSection({
  form,
  catalog,
  currency,
  setPlan,
  movePlan,
  setForm,
}: {
  form: OfferForm;
  catalog: OfferCatalog;
  currency: string;
  setPlan: (i: number, patch: Partial<PlanForm>) => void;
  movePlan: (i: number, by: -1 | 1) => void;
  setForm: SetForm;
}) {
  const [adding, setAdding] = useState<string | null>(null);
  const available = catalog.plans.filter((p) => !form.plans.some((x) => x.plan === p.id));
  const add = () => {
    const plan = catalog.plans.find((p) => p.id === adding);
    if (!plan) return;
    setForm((f) => ({
      ...f,
      plans: [
        ...f.plans,
        { plan: plan.id, prices: regularPrices(plan, currency), extras: { entitlements: [], addons: [], cycles: '' } },
      ],
    }));
    setAdding(null);
  };
  return (
    <Stack gap="xs" aria-label="Plans in this offer" role="group">
      <Title order={4} size="h5">
        Plans
      </Title>
      <Text size="xs" c="dimmed">
        Buyers see them in this order. A price with cycles bills the offer price that many times, then the plan&apos;s
        regular price.
      </Text>
      {form.plans.map((p, i) => (
        <PlanCard
          key={p.plan}
          row={p}
          plan={catalog.plans.find((x) => x.id === p.plan)}
          catalog={catalog}
          first={i === 0}
          last={i === form.plans.length - 1}
          only={form.plans.length === 1}
          onChange={(patch) => setPlan(i, patch)}
          onMove={(by) => movePlan(i, by)}
          onRemove={() => setForm((f) => ({ ...f, plans: f.plans.filter((_, j) => j !== i) }))}
        />
      ))}
      <Group gap="xs" align="flex-end" wrap="wrap">
        <Select
          label="Add a plan from the catalog"
          placeholder={available.length ? 'Choose a plan' : 'Every plan is in the offer'}
          data={available.map((p) => ({ value: p.id, label: p.name }))}
          value={adding}
          onChange={setAdding}
          disabled={!available.length}
          style={{ flex: '1 1 180px' }}
        />
        <Button variant="light" onClick={add} disabled={!adding}>
          Add plan
        </Button>
      </Group>
    </Stack>
  );
}

function PlanCard({
  row,
  plan,
  catalog,
  first,
  last,
  only,
  onChange,
  onMove,
  onRemove,
}: {
  row: PlanForm;
  plan: CatalogPlan | undefined;
  catalog: OfferCatalog;
  first: boolean;
  last: boolean;
  only: boolean;
  onChange: (patch: Partial<PlanForm>) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}) {
  const name = plan?.name ?? row.plan;
  const setPrice = (k: number, patch: Partial<PriceForm>) =>
    onChange({ prices: row.prices.map((x, j) => (j === k ? { ...x, ...patch } : x)) });
  const addPrice = () => {
    const used = new Set(row.prices.map((x) => `${x.interval}/${x.currency}`));
    const cur = row.prices[0]?.currency ?? 'USD';
    const interval: Interval = used.has(`month/${cur}`) ? 'year' : 'month';
    onChange({
      prices: [...row.prices, { interval, amount: listPrice(plan, interval, cur) ?? '', currency: cur, cycles: '' }],
    });
  };
  const label = (x: PriceForm) => {
    const twin = row.prices.filter((y) => y.interval === x.interval).length > 1;
    return `${row.plan} ${intervalWord(x.interval)} price${twin ? ` ${x.currency}` : ''}`;
  };
  return (
    <Card withBorder padding="sm" aria-label={`Plan ${name}`} role="group">
      <Stack gap="xs">
        <Group justify="space-between" wrap="nowrap" gap="xs">
          <div style={{ minWidth: 0 }}>
            <Text fw={700} truncate>
              {name}
            </Text>
            <Text size="xs" c="dimmed">
              {row.plan}
              {plan?.pricingCard &&
                ` · list ${[
                  plan.pricingCard.monthlyPrice !== undefined && `${plan.pricingCard.monthlyPrice}/month`,
                  plan.pricingCard.yearlyPrice !== undefined && `${plan.pricingCard.yearlyPrice}/year`,
                ]
                  .filter(Boolean)
                  .join(', ')} ${plan.pricingCard.currency ?? 'USD'}`}
            </Text>
          </div>
          <Group gap={4} wrap="nowrap">
            <ActionIcon variant="default" aria-label={`Move ${name} up`} disabled={first} onClick={() => onMove(-1)}>
              ↑
            </ActionIcon>
            <ActionIcon variant="default" aria-label={`Move ${name} down`} disabled={last} onClick={() => onMove(1)}>
              ↓
            </ActionIcon>
            <CloseButton
              aria-label={`Remove plan ${name}`}
              title={only ? 'An offer sells at least one plan' : `Remove ${name} from the offer`}
              disabled={only}
              onClick={onRemove}
            />
          </Group>
        </Group>
        {row.prices.map((x, k) => {
          const list = listPrice(plan, x.interval, x.currency);
          return (
            <Group key={k} gap="xs" align="flex-start" wrap="nowrap">
              {/* Container queries: two columns in a phone's narrow card, four beside the preview on a desktop. */}
              <Box style={{ flex: 1, minWidth: 0 }}>
                <SimpleGrid type="container" cols={{ base: 2, '330px': 4 }} spacing="xs">
                  <Select
                    label="Interval"
                    aria-label={`Interval of ${label(x)}`}
                    size="xs"
                    data={[
                      { value: 'month', label: 'Monthly' },
                      { value: 'year', label: 'Yearly' },
                    ]}
                    value={x.interval}
                    allowDeselect={false}
                    onChange={(v) => v && setPrice(k, { interval: v as Interval })}
                  />
                  <NumberInput
                    label="Price"
                    aria-label={label(x)}
                    size="xs"
                    min={0}
                    decimalScale={2}
                    value={x.amount}
                    onChange={(v) => setPrice(k, { amount: num(v) })}
                    description={list !== null && list !== x.amount ? `list ${list}` : undefined}
                    inputWrapperOrder={['label', 'input', 'description']}
                  />
                  <TextInput
                    label="Currency"
                    aria-label={`Currency of ${label(x)}`}
                    size="xs"
                    maxLength={3}
                    value={x.currency}
                    onChange={(e) => setPrice(k, { currency: e.currentTarget.value.toUpperCase() })}
                  />
                  <NumberInput
                    label="For cycles"
                    aria-label={`Cycles of ${label(x)}`}
                    placeholder="always"
                    size="xs"
                    min={1}
                    max={120}
                    allowDecimal={false}
                    value={x.cycles}
                    onChange={(v) => setPrice(k, { cycles: num(v) })}
                  />
                </SimpleGrid>
              </Box>
              <CloseButton
                aria-label={`Remove ${label(x)}`}
                disabled={row.prices.length === 1}
                title={row.prices.length === 1 ? 'A plan in an offer needs a price' : 'Remove this price'}
                onClick={() => onChange({ prices: row.prices.filter((_, j) => j !== k) })}
                mt={21}
              />
            </Group>
          );
        })}
        <Button size="compact-xs" variant="subtle" w="fit-content" onClick={addPrice}>
          Add a price
        </Button>
        <Extras row={row} plan={name} catalog={catalog} onChange={(extras) => onChange({ extras })} />
      </Stack>
    </Card>
  );
}

/** Extras: limits that override the plan's for buyers of this offer, add-ons they get, how long both last. */
function Extras({
  row,
  plan,
  catalog,
  onChange,
}: {
  row: PlanForm;
  plan: string;
  catalog: OfferCatalog;
  onChange: (extras: PlanForm['extras']) => void;
}) {
  const [adding, setAdding] = useState<string | null>(null);
  const ex = row.extras;
  const available = catalog.entitlements.filter((e) => !ex.entitlements.some((x) => x.id === e.id));
  const entitlement = (id: string) => catalog.entitlements.find((e) => e.id === id);
  return (
    <Stack gap={6} pt={4} style={{ borderTop: '1px solid var(--mantine-color-gray-2)' }}>
      <Text size="sm" fw={600}>
        Extras for buyers
      </Text>
      {ex.entitlements.map((e, k) => {
        const ent = entitlement(e.id);
        return (
          <Group key={e.id} gap="xs" wrap="nowrap">
            <Text size="sm" style={{ flex: 1, minWidth: 0 }} truncate>
              {ent?.name ?? e.id}
            </Text>
            {ent?.type === 'boolean' ? (
              <Text size="xs" c="dimmed">
                switched on
              </Text>
            ) : (
              <NumberInput
                aria-label={`${plan} extra ${ent?.name ?? e.id} limit`}
                placeholder="unlimited"
                size="xs"
                w={110}
                min={0}
                allowDecimal={false}
                value={e.max}
                onChange={(v) =>
                  onChange({
                    ...ex,
                    entitlements: ex.entitlements.map((x, j) => (j === k ? { ...x, max: num(v) } : x)),
                  })
                }
              />
            )}
            <CloseButton
              aria-label={`Remove extra ${ent?.name ?? e.id} from ${plan}`}
              onClick={() => onChange({ ...ex, entitlements: ex.entitlements.filter((_, j) => j !== k) })}
            />
          </Group>
        );
      })}
      <Group gap="xs" wrap="nowrap">
        <Select
          aria-label={`Extra limit for ${plan}`}
          placeholder={available.length ? 'Override a limit…' : 'Every entitlement has an extra'}
          size="xs"
          data={available.map((e) => ({ value: e.id, label: e.name }))}
          value={adding}
          onChange={setAdding}
          disabled={!available.length}
          style={{ flex: 1, minWidth: 0 }}
        />
        <Button
          size="xs"
          variant="light"
          disabled={!adding}
          onClick={() => {
            if (!adding) return;
            onChange({ ...ex, entitlements: [...ex.entitlements, { id: adding, max: '' }] });
            setAdding(null);
          }}
        >
          Add extra
        </Button>
      </Group>
      <MultiSelect
        label="Add-ons included"
        aria-label={`${plan} add-ons included`}
        placeholder={ex.addons.length ? undefined : catalog.addons.length ? 'None' : 'The app has no add-ons'}
        size="xs"
        data={catalog.addons.map((a) => ({ value: a.id, label: a.name }))}
        value={ex.addons}
        onChange={(addons) => onChange({ ...ex, addons })}
        disabled={!catalog.addons.length}
      />
      <NumberInput
        label="Extras last (billing cycles)"
        aria-label={`${plan} extras cycles`}
        placeholder="while subscribed"
        size="xs"
        w={180}
        min={1}
        max={120}
        allowDecimal={false}
        value={ex.cycles}
        onChange={(v) => onChange({ ...ex, cycles: num(v) })}
      />
    </Stack>
  );
}

function BumpsSection({
  form,
  catalog,
  currency,
  setForm,
}: {
  form: OfferForm;
  catalog: OfferCatalog;
  currency: string;
  setForm: SetForm;
}) {
  const [addon, setAddon] = useState<string | null>(null);
  const [price, setPrice] = useState<Num>('');
  const available = catalog.addons.filter((a) => !form.bumps.some((b) => b.addon === a.id));
  const setBump = (i: number, patch: Partial<BumpForm>) =>
    setForm((f) => ({ ...f, bumps: f.bumps.map((b, j) => (j === i ? { ...b, ...patch } : b)) }));
  const add = () => {
    const a = catalog.addons.find((x) => x.id === addon);
    if (!a) return;
    let id = a.id;
    for (let n = 2; form.bumps.some((b) => b.id === id); n++) id = `${a.id}_${n}`;
    // Bumps are paid as one order, so they share the first bump's currency (else the offer's).
    const cur = form.bumps[0]?.currency ?? currency;
    setForm((f) => ({ ...f, bumps: [...f.bumps, { id, name: a.name, addon: a.id, price, currency: cur }] }));
    setAddon(null);
    setPrice('');
  };
  return (
    <Stack gap="xs" aria-label="Order bumps" role="group">
      <Title order={4} size="h5">
        Order bumps
      </Title>
      <Text size="xs" c="dimmed">
        One-off add-ons offered beside the plan at checkout, paid once with the first payment.
      </Text>
      {form.bumps.map((b, i) => (
        <Group key={b.id} gap="xs" align="flex-start" wrap="wrap" style={{ rowGap: 4 }}>
          <TextInput
            label="Shown as"
            aria-label={`Bump ${b.id} name`}
            size="xs"
            value={b.name}
            onChange={(e) => setBump(i, { name: e.currentTarget.value })}
            style={{ flex: '1 1 180px' }}
            description={`add-on ${b.addon}`}
            inputWrapperOrder={['label', 'input', 'description']}
          />
          <Group gap="xs" align="flex-start" wrap="nowrap">
            <NumberInput
              label="Price"
              aria-label={`Bump ${b.id} price`}
              size="xs"
              w={90}
              min={0}
              decimalScale={2}
              value={b.price}
              onChange={(v) => setBump(i, { price: num(v) })}
            />
            <TextInput
              label="Currency"
              aria-label={`Bump ${b.id} currency`}
              size="xs"
              w={72}
              maxLength={3}
              value={b.currency}
              onChange={(e) => setBump(i, { currency: e.currentTarget.value.toUpperCase() })}
            />
            <CloseButton
              aria-label={`Remove bump ${b.name}`}
              onClick={() => setForm((f) => ({ ...f, bumps: f.bumps.filter((_, j) => j !== i) }))}
              mt={21}
            />
          </Group>
        </Group>
      ))}
      <Group gap="xs" align="flex-end" wrap="wrap">
        <Select
          label="Add an order bump"
          placeholder={
            catalog.addons.length
              ? available.length
                ? 'Choose an add-on'
                : 'Every add-on is a bump'
              : 'No add-ons yet'
          }
          data={available.map((a) => ({ value: a.id, label: a.name }))}
          value={addon}
          onChange={setAddon}
          disabled={!available.length}
          style={{ flex: '1 1 160px' }}
        />
        <NumberInput
          label="Bump price"
          w={100}
          min={0}
          decimalScale={2}
          value={price}
          onChange={(v) => setPrice(num(v))}
        />
        <Button variant="light" onClick={add} disabled={!addon || price === ''}>
          Add bump
        </Button>
      </Group>
      {!catalog.addons.length && (
        <Text size="xs" c="dimmed">
          Order bumps sell add-ons: create one in the catalog first.
        </Text>
      )}
    </Stack>
  );
}

function ScheduleSection({
  form,
  catalog,
  offerId,
  setForm,
}: {
  form: OfferForm;
  catalog: OfferCatalog;
  offerId: string;
  setForm: SetForm;
}) {
  return (
    <Stack gap="xs">
      <Title order={4} size="h5">
        Schedule and fallback
      </Title>
      <Group gap="xs" grow wrap="wrap">
        <TextInput
          type="datetime-local"
          label="Starts"
          description="blank: as soon as published"
          value={form.starts_at}
          onChange={(e) => setForm({ ...form, starts_at: e.currentTarget.value })}
          miw={170}
        />
        <TextInput
          type="datetime-local"
          label="Expires"
          description="blank: never"
          value={form.expires_at}
          onChange={(e) => setForm({ ...form, expires_at: e.currentTarget.value })}
          miw={170}
        />
      </Group>
      <Select
        label="Fallback offer"
        description="Shown instead when this one cannot be bought (expired, archived, not started)"
        placeholder="Regular prices"
        clearable
        data={catalog.offers.filter((o) => o.id !== offerId).map((o) => ({ value: o.id, label: o.name }))}
        value={form.fallback}
        onChange={(v) => setForm({ ...form, fallback: v })}
      />
    </Stack>
  );
}

function Preview({
  preview,
  error,
  catalog,
}: {
  preview: OffersPreviewDraftResponse | null;
  error: string | null;
  catalog: OfferCatalog;
}) {
  const addonName = (id: string) => catalog.addons.find((a) => a.id === id)?.name ?? id;
  return (
    <Card
      withBorder
      bg="gray.0"
      aria-label="Live preview"
      // Beside a long editor the preview stays in view while the person scrolls.
      style={{ alignSelf: 'start', position: 'sticky', top: 'calc(var(--app-shell-header-offset, 60px) + 16px)' }}
    >
      <Stack gap="xs">
        <Text size="xs" tt="uppercase" c="dimmed" fw={700}>
          Live preview: what a buyer sees
        </Text>
        {error && <ErrorText error={error} />}
        {preview && (
          <Stack gap="xs" style={{ opacity: error ? 0.45 : 1 }} aria-busy={!!error}>
            <Title order={4}>{preview.offer?.name ?? 'Regular prices'}</Title>
            {preview.offer?.description && <Text size="sm">{preview.offer.description}</Text>}
            <SimpleGrid cols={{ base: 1, xs: 2 }}>
              {preview.plans.map((p) => (
                <Card key={p.plan.id} withBorder>
                  <Text fw={700}>{p.plan.name}</Text>
                  {p.prices.map((x) => (
                    <Text key={`${x.interval}/${x.currency}`} size="sm">
                      <b>
                        {x.price} {x.currency}
                      </b>{' '}
                      / {x.interval}{' '}
                      {x.list_price > x.price && (
                        <Text span td="line-through" c="dimmed" size="sm">
                          {x.list_price}
                        </Text>
                      )}
                      {x.cycles !== null && (
                        <Text span size="xs" c="dimmed">
                          {' '}
                          for {x.cycles} {x.interval}
                          {x.cycles === 1 ? '' : 's'}, then {x.list_price}
                        </Text>
                      )}
                    </Text>
                  ))}
                  {p.entitlements.map((e) => (
                    <Text key={e.id} size="xs" c="dimmed">
                      {e.type === 'boolean' ? e.name : `${e.name}: ${e.max ?? 'unlimited'}`}
                      {p.extras.entitlements.some((x) => x.id === e.id) && (
                        <Text span size="xs" c="teal.8" fw={600}>
                          {' '}
                          (offer extra)
                        </Text>
                      )}
                    </Text>
                  ))}
                  {p.extras.addons.map((a) => (
                    <Text key={a} size="xs" c="teal.8" fw={600}>
                      + {addonName(a)}
                    </Text>
                  ))}
                  {p.extras.cycles !== null && (p.extras.entitlements.length > 0 || p.extras.addons.length > 0) && (
                    <Text size="xs" c="dimmed">
                      extras for the first {p.extras.cycles} cycle{p.extras.cycles === 1 ? '' : 's'}
                    </Text>
                  )}
                </Card>
              ))}
            </SimpleGrid>
            {preview.bumps.map((b) => (
              <Text key={b.id} size="sm">
                ☐ Add {b.name} for {b.price} {b.currency}
              </Text>
            ))}
          </Stack>
        )}
      </Stack>
    </Card>
  );
}
