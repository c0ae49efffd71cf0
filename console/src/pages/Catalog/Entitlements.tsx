// Entitlements: create (type, overage mode, the upgrade offer of a 402; a credits pool with its rollover, a usage
// entitlement drawing from a pool at a cost), edit and delete, the confirmation naming the plans and incentives that
// hold it and the offers that grant it.
import { Badge, Button, Card, Group, Select, SimpleGrid, Stack, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import type { Entitlement } from '../../api';
import { ConfirmDialog, ErrorText, useAction } from '../../ui';
import {
  CREDITS_EMPTY,
  CREDITS_FIELDS,
  CreditsFields,
  creditsBody,
  creditsFormOf,
  creditsText,
  PoolUse,
  poolsOf,
  type CreditsForm,
} from './credits';
import {
  EditDialog,
  Hint,
  names,
  offersUsing,
  orNull,
  RowActions,
  deleteRefusal,
  type Offer,
  type SectionProps,
} from './shared';

type Mode = 'allow' | 'block';
interface EntForm {
  id: string;
  name: string;
  // A credits pool (issue 42): features draw from it at a cost; a plan's limit on it is its monthly grant.
  type: 'usage' | 'boolean' | 'credits';
  description: string;
  mode: Mode;
  offerId: string | null;
  /** A usage entitlement: what it counts: calls for the account, calls for each member, or the members (seats). */
  kept: Kept;
  credits: CreditsForm;
}
type Kept = 'account' | 'entity' | 'seats';
const EMPTY: EntForm = {
  id: '',
  name: '',
  type: 'usage',
  description: '',
  mode: 'allow',
  offerId: null,
  kept: 'account',
  credits: CREDITS_EMPTY,
};
const ENT_FIELDS = [
  'id',
  'name',
  'type',
  'description',
  'overage.mode',
  'overage.offer_id',
  'counts',
  'per',
  ...CREDITS_FIELDS,
] as const;

const KEPT = [
  { value: 'account', label: 'Calls, for the whole account' },
  { value: 'entity', label: 'Calls, for each member (entity)' },
  { value: 'seats', label: 'Members registered (the seats)' },
];
const keptOf = (e: Entitlement): Kept =>
  e.counts === 'entities' ? 'seats' : e.per === 'entity' ? 'entity' : 'account';

/**
 * `counts` and `per` of a usage entitlement's body: on create only what differs from a plain counter; on update only
 * what changed (the API refuses changing them under counters, so an unchanged form sends neither).
 */
function keptBody(f: EntForm, before?: Entitlement) {
  if (f.type !== 'usage') return {};
  const counts = f.kept === 'seats' ? ('entities' as const) : null;
  const per = f.kept === 'entity' ? ('entity' as const) : ('account' as const);
  const was = before ? { counts: before.counts, per: before.per } : { counts: null, per: 'account' };
  return {
    ...(counts !== was.counts ? { counts } : {}),
    ...(per !== was.per ? { per } : {}),
  };
}

const MODES = [
  { value: 'allow', label: 'Allow: keep counting (soft limit)' },
  { value: 'block', label: 'Block: refuse with 402 (hard limit)' },
];

/** The overage part of a body: only usage entitlements have limits to pass. */
const overageOf = (f: EntForm) =>
  f.type === 'usage' ? { mode: f.mode, offer_id: f.mode === 'block' ? f.offerId : null } : undefined;

function EntFields({
  form,
  set,
  field,
  offers,
  pools,
  isNew,
}: {
  form: EntForm;
  set: (f: EntForm) => void;
  field: (name: string) => string | undefined;
  offers: Offer[];
  pools: Entitlement[];
  isNew: boolean;
}) {
  const offerData = offers.map((o) => ({
    value: o.id,
    label: `${o.name}${o.live_status === 'active' ? '' : ` (${o.live_status})`}`,
  }));
  // An offer the entitlement names that is no longer listed still shows as itself.
  if (form.offerId && !offers.some((o) => o.id === form.offerId))
    offerData.push({ value: form.offerId, label: `${form.offerId} (not found)` });
  return (
    <Stack gap="xs">
      {isNew && (
        <TextInput
          label="Entitlement id"
          required
          value={form.id}
          error={field('id')}
          onChange={(e) => set({ ...form, id: e.currentTarget.value })}
        />
      )}
      <TextInput
        label="Entitlement name"
        required
        value={form.name}
        error={field('name')}
        onChange={(e) => set({ ...form, name: e.currentTarget.value })}
      />
      <Select
        label="Type"
        description={isNew ? undefined : 'The type cannot change after creation'}
        data={[
          { value: 'usage', label: 'Usage (metered)' },
          { value: 'boolean', label: 'Boolean (on/off)' },
          { value: 'credits', label: 'Credits (a pool features draw from)' },
        ]}
        value={form.type}
        disabled={!isNew}
        error={field('type')}
        onChange={(v) => set({ ...form, type: (v ?? 'usage') as EntForm['type'] })}
        allowDeselect={false}
      />
      <Textarea
        label="Entitlement description"
        autosize
        minRows={1}
        value={form.description}
        error={field('description')}
        onChange={(e) => set({ ...form, description: e.currentTarget.value })}
      />
      {form.type === 'usage' && (
        <>
          <Select
            label="Past the limit"
            data={MODES}
            value={form.mode}
            error={field('overage.mode')}
            onChange={(v) => set({ ...form, mode: (v ?? 'allow') as Mode })}
            allowDeselect={false}
          />
          {form.mode === 'block' && (
            <Select
              label="Upgrade offer of the 402"
              description="The offer whose price the refusal's upgrade link uses; none: the plans' regular prices"
              placeholder={offers.length ? 'Regular prices' : 'No offers yet: regular prices'}
              data={offerData}
              value={form.offerId}
              error={field('overage.offer_id')}
              onChange={(v) => set({ ...form, offerId: v })}
              clearable
            />
          )}
          <Select
            label="Counts"
            description="Team plans: a limit per member, or the plan's seats (members are registered through the API)"
            data={KEPT}
            value={form.kept}
            error={field('counts') ?? field('per')}
            onChange={(v) => set({ ...form, kept: (v ?? 'account') as Kept })}
            allowDeselect={false}
          />
          <Hint>Webhook events usage.limit_warning at 80% of a limit and usage.limit_reached at 100% (fixed).</Hint>
        </>
      )}
      <CreditsFields
        type={form.type}
        form={form.credits}
        set={(credits) => set({ ...form, credits })}
        field={field}
        pools={pools.filter((p) => p.id !== form.id)}
      />
    </Stack>
  );
}

export function NewEntitlement({ api, catalog, reload }: SectionProps) {
  const [form, setForm] = useState<EntForm>(EMPTY);
  const action = useAction(ENT_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = {
      id: form.id,
      name: form.name,
      type: form.type,
      description: orNull(form.description),
      overage: overageOf(form),
      credits: creditsBody(form.type, form.credits) ?? undefined,
      ...keptBody(form),
    };
    if (await action.run(() => api.entitlements.create(body))) {
      setForm(EMPTY);
      await reload();
    }
  };
  return (
    <Card withBorder miw={260}>
      <form onSubmit={submit} aria-label="New entitlement">
        <Stack gap="xs">
          <Title order={3} size="h5">
            New entitlement
          </Title>
          <EntFields
            form={form}
            set={setForm}
            field={action.field}
            offers={catalog.offers}
            pools={poolsOf(catalog)}
            isNew
          />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="entitlements.create">
            Add entitlement
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function EditEntitlement({
  props,
  ent,
  onDone,
}: {
  props: SectionProps;
  ent: Entitlement;
  onDone: () => Promise<void>;
}) {
  const [form, setForm] = useState<EntForm>({
    id: ent.id,
    name: ent.name,
    type: ent.type,
    description: ent.description ?? '',
    mode: ent.overage.mode,
    offerId: ent.overage.offer_id,
    kept: keptOf(ent),
    credits: creditsFormOf(ent),
  });
  const action = useAction(ENT_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    // A pool has no overage (the API refuses one): its name, description and rollover.
    const credits = creditsBody(form.type, form.credits, ent);
    const body =
      form.type === 'credits'
        ? { name: form.name, description: orNull(form.description), credits }
        : {
            name: form.name,
            description: orNull(form.description),
            overage: overageOf(form),
            credits,
            ...keptBody(form, ent),
          };
    if (await action.run(() => props.api.entitlements.update(ent.id, body))) await onDone();
  };
  return (
    <form onSubmit={submit}>
      <Stack gap="xs">
        <EntFields
          form={form}
          set={setForm}
          field={action.field}
          offers={props.catalog.offers}
          pools={poolsOf(props.catalog)}
          isNew={false}
        />
        <ErrorText error={action.error} />
        <Button type="submit" w="fit-content" loading={action.busy} data-route="entitlements.update">
          Save entitlement
        </Button>
      </Stack>
    </form>
  );
}

function DeleteEntitlement({ ent, props, onClose }: { ent: Entitlement; props: SectionProps; onClose: () => void }) {
  const { api, catalog, reload } = props;
  const plans = catalog.plans.filter((p) => p.entitlements.some((e) => e.id === ent.id)).map((p) => p.name);
  const incentives = catalog.incentives.filter((i) => i.entitlements.some((e) => e.id === ent.id)).map((i) => i.name);
  const offers = offersUsing(catalog.offers, (o) =>
    o.plans.some((p) => p.extras.entitlements.some((e) => e.id === ent.id)),
  );
  return (
    <ConfirmDialog
      opened
      title={`Delete entitlement ${ent.name}?`}
      confirmLabel={`Delete entitlement ${ent.name}`}
      onClose={onClose}
      onConfirm={async () => (await api.entitlements.delete(ent.id), await reload())}
    >
      <Text size="sm">
        Entitlement <strong>{ent.name}</strong> (<code>{ent.id}</code>) is deleted for good
        {ent.type === 'usage' ? ', with every account’s counter for it (usage history stays)' : ''}.
      </Text>
      <Text size="sm">
        On plans: <strong>{names(plans)}</strong>; on incentives: <strong>{names(incentives)}</strong>
        {plans.length || incentives.length ? ' — the API refuses while it is on any: detach it there first.' : ''}
      </Text>
      <Text size="sm">
        Offers granting it as an extra: <strong>{names(offers)}</strong>
        {offers.length ? ' — edit them too.' : ''}
      </Text>
    </ConfirmDialog>
  );
}

function overageText(e: Entitlement, offers: Offer[]) {
  if (e.type === 'credits') return 'credits pool';
  if (e.type !== 'usage') return 'on/off';
  const kept = e.counts === 'entities' ? ' · the seats' : e.per === 'entity' ? ' · per member' : '';
  if (e.overage.mode === 'allow') return `usage${kept} · counts on past the limit`;
  const offer = e.overage.offer_id && (offers.find((o) => o.id === e.overage.offer_id)?.name ?? e.overage.offer_id);
  return `usage${kept} · blocks past the limit (402)${offer ? `, upgrade offer ${offer}` : ''}`;
}

export function Entitlements(props: SectionProps) {
  const { catalog, reload } = props;
  const [editing, setEditing] = useState<Entitlement | null>(null);
  const [deleting, setDeleting] = useState<Entitlement | null>(null);
  return (
    <Stack gap="xs">
      <Title order={3} size="h4" id="entitlements">
        Entitlements
      </Title>
      {catalog.entitlements.length === 0 && <Hint>No entitlements yet.</Hint>}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} style={{ alignItems: 'start' }}>
        {catalog.entitlements.map((e) => (
          <Card component="section" withBorder key={e.id} aria-label={`Entitlement ${e.name}`}>
            <Group justify="space-between" wrap="nowrap" align="flex-start">
              <div>
                <Text fw={600}>
                  {e.name}{' '}
                  {e.type === 'usage' && e.overage.mode === 'block' && (
                    <Badge size="xs" color="orange">
                      hard limit
                    </Badge>
                  )}
                </Text>
                <Text size="xs" c="dimmed">
                  <code>{e.id}</code> · {overageText(e, catalog.offers)}
                </Text>
                {creditsText(e, catalog) && (
                  <Text size="xs" aria-label={`${e.name} credits`}>
                    {creditsText(e, catalog)}
                  </Text>
                )}
              </div>
              {props.canEdit && (
                <RowActions
                  kind="entitlements"
                  blocked={deleteRefusal('entitlements', e.id, catalog)}

                  label={`entitlement ${e.name}`}
                  onEdit={() => setEditing(e)}
                  onDelete={() => setDeleting(e)}
                />
              )}
            </Group>
            {e.description && <Text size="sm">{e.description}</Text>}
            {e.type === 'credits' && <PoolUse pool={e} catalog={catalog} />}
          </Card>
        ))}
        {props.canEdit && <NewEntitlement {...props} />}
      </SimpleGrid>
      {editing && (
        <EditDialog opened title={`Edit entitlement ${editing.name}`} onClose={() => setEditing(null)}>
          <EditEntitlement props={props} ent={editing} onDone={async () => (await reload(), setEditing(null))} />
        </EditDialog>
      )}
      {deleting && <DeleteEntitlement ent={deleting} props={props} onClose={() => setDeleting(null)} />}
    </Stack>
  );
}
