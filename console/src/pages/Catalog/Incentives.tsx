// Incentives: create, edit, delete, and what each grants on top of a plan: entitlement overrides (attach with a
// limit, change the limit, detach) and add-ons (attach, detach).
import {
  Button,
  Card,
  Checkbox,
  Group,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import type { Incentive } from '../../api';
import { ConfirmDialog, ErrorText, useAction } from '../../ui';
import {
  EditableArea,
  EditDialog,
  Hint,
  nameOf,
  names,
  orNull,
  RowActions,
  deleteRefusal,
  type SectionProps,
} from './shared';

interface IncForm {
  id: string;
  name: string;
  description: string;
}
const EMPTY: IncForm = { id: '', name: '', description: '' };
const INC_FIELDS = ['id', 'name', 'description'] as const;

function IncFields({
  form,
  set,
  field,
  isNew,
}: {
  form: IncForm;
  set: (f: IncForm) => void;
  field: (name: string) => string | undefined;
  isNew: boolean;
}) {
  return (
    <Stack gap="xs">
      {isNew && (
        <TextInput
          label="Incentive id"
          required
          value={form.id}
          error={field('id')}
          onChange={(e) => set({ ...form, id: e.currentTarget.value })}
        />
      )}
      <TextInput
        label="Incentive name"
        required
        value={form.name}
        error={field('name')}
        onChange={(e) => set({ ...form, name: e.currentTarget.value })}
      />
      <Textarea
        label="Incentive description"
        autosize
        minRows={1}
        value={form.description}
        error={field('description')}
        onChange={(e) => set({ ...form, description: e.currentTarget.value })}
      />
    </Stack>
  );
}

function NewIncentive({ api, reload }: Pick<SectionProps, 'api' | 'reload'>) {
  const [form, setForm] = useState<IncForm>(EMPTY);
  const action = useAction(INC_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { id: form.id, name: form.name, description: orNull(form.description) };
    if (await action.run(() => api.incentives.create(body))) {
      setForm(EMPTY);
      await reload();
    }
  };
  return (
    <Card withBorder miw={260}>
      <form onSubmit={submit} aria-label="New incentive">
        <Stack gap="xs">
          <Title order={3} size="h5">
            New incentive
          </Title>
          <IncFields form={form} set={setForm} field={action.field} isNew />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="incentives.create">
            Add incentive
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function EditIncentive({ props, inc, onDone }: { props: SectionProps; inc: Incentive; onDone: () => Promise<void> }) {
  const [form, setForm] = useState<IncForm>({ id: inc.id, name: inc.name, description: inc.description ?? '' });
  const action = useAction(INC_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { name: form.name, description: orNull(form.description) };
    if (await action.run(() => props.api.incentives.update(inc.id, body))) await onDone();
  };
  return (
    <form onSubmit={submit}>
      <Stack gap="xs">
        <IncFields form={form} set={setForm} field={action.field} isNew={false} />
        <ErrorText error={action.error} />
        <Button type="submit" w="fit-content" loading={action.busy} data-route="incentives.update">
          Save incentive
        </Button>
      </Stack>
    </form>
  );
}

function DeleteIncentive({ inc, props, onClose }: { inc: Incentive; props: SectionProps; onClose: () => void }) {
  const { api, catalog, reload } = props;
  const [accounts, setAccounts] = useState<number | null>(null);
  useEffect(() => {
    api.accounts.listWithIncentive({ incentive: inc.id, per_page: 1 }).then(
      (p) => setAccounts(p.total),
      () => setAccounts(null),
    );
  }, [api, inc.id]);
  return (
    <ConfirmDialog
      opened
      title={`Delete incentive ${inc.name}?`}
      confirmLabel={`Delete incentive ${inc.name}`}
      onClose={onClose}
      onConfirm={async () => (await api.incentives.delete(inc.id), await reload())}
    >
      <Text size="sm">
        Incentive <strong>{inc.name}</strong> (<code>{inc.id}</code>) is deleted for good.
      </Text>
      <Text size="sm">
        Accounts it applies to now: <strong>{accounts ?? '…'}</strong>. The API refuses while any account has it
        (expired or not): remove it from them first.
      </Text>
      <Text size="sm">
        Removed with it: its overrides ({names(inc.entitlements.map((e) => nameOf(catalog.entitlements, e.id)))}) and
        add-ons ({names(inc.addons.map((a) => nameOf(catalog.addons, a)))}).
      </Text>
    </ConfirmDialog>
  );
}

/** One override: its limit (saved on Enter or leaving the field) and a remove button. */
function Override({
  props,
  inc,
  ent,
  action,
}: {
  props: SectionProps;
  inc: Incentive;
  ent: { id: string; max: number | null };
  action: ReturnType<typeof useAction>;
}) {
  const { api, catalog, reload } = props;
  const [value, setValue] = useState<string | number>(ent.max ?? '');
  const label = `${inc.name} × ${nameOf(catalog.entitlements, ent.id)}`;
  const save = () =>
    action.run(async () => {
      const max = value === '' ? null : Number(value);
      if (max === ent.max) return;
      await api.incentives.setEntitlementLimit(inc.id, ent.id, { max });
      await reload();
    });
  return (
    <Group gap="xs" wrap="nowrap">
      <Text size="sm" style={{ flex: 1 }}>
        {nameOf(catalog.entitlements, ent.id)}
      </Text>
      <NumberInput
        aria-label={`${label} limit`}
        size="xs"
        min={0}
        allowDecimal={false}
        placeholder="Unlimited"
        value={value}
        onChange={setValue}
        onBlur={save}
        onKeyDown={(e) => e.key === 'Enter' && save()}
        w={110}
      />
      <Button
        size="compact-xs"
        variant="subtle"
        color="red"
        aria-label={`Remove ${label}`}
        onClick={() => action.run(async () => (await api.incentives.detachEntitlement(inc.id, ent.id), await reload()))}
      >
        Remove
      </Button>
    </Group>
  );
}

/** What an incentive grants: overrides of entitlement limits and add-ons. */
function Grants({ props, inc }: { props: SectionProps; inc: Incentive }) {
  const { api, catalog, reload } = props;
  const action = useAction();
  const [adding, setAdding] = useState<string | null>(null);
  const [max, setMax] = useState<string | number>('');
  const available = catalog.entitlements.filter((e) => !inc.entitlements.some((x) => x.id === e.id));
  return (
    <Stack gap={6} mt="xs">
      <Text size="sm" fw={500}>
        Overrides
      </Text>
      {inc.entitlements.length === 0 && <Hint>None: accounts keep their plan&apos;s limits.</Hint>}
      {inc.entitlements.map((e) => (
        <Override key={`${e.id}:${e.max}`} props={props} inc={inc} ent={e} action={action} />
      ))}
      {available.length > 0 && (
        <Group gap="xs" align="flex-end" wrap="wrap">
          <Select
            aria-label={`Entitlement to override on ${inc.name}`}
            placeholder="Entitlement"
            size="xs"
            data={available.map((e) => ({ value: e.id, label: e.name }))}
            value={adding}
            onChange={setAdding}
            w={160}
          />
          <NumberInput
            aria-label={`New override limit on ${inc.name}`}
            size="xs"
            min={0}
            allowDecimal={false}
            placeholder="Unlimited"
            value={max}
            onChange={setMax}
            w={110}
          />
          <Button
            size="xs"
            variant="light"
            disabled={!adding}
            onClick={() =>
              action.run(async () => {
                await api.incentives.attachEntitlement(inc.id, { id: adding!, max: max === '' ? null : Number(max) });
                setAdding(null);
                setMax('');
                await reload();
              })
            }
          >
            Add override
          </Button>
        </Group>
      )}
      <Text size="sm" fw={500} mt={4}>
        Add-ons
      </Text>
      {catalog.addons.length === 0 && <Hint>No add-ons in the catalog yet.</Hint>}
      <Group gap="md">
        {catalog.addons.map((a) => (
          <Checkbox
            key={a.id}
            label={a.name}
            aria-label={`${inc.name} grants ${a.name}`}
            checked={inc.addons.includes(a.id)}
            onChange={(e) => {
              const on = e.currentTarget.checked;
              void action.run(async () => {
                if (on) await api.incentives.attachAddon(inc.id, { id: a.id });
                else await api.incentives.detachAddon(inc.id, a.id);
                await reload();
              });
            }}
          />
        ))}
      </Group>
      <ErrorText error={action.error} />
    </Stack>
  );
}

export function Incentives(props: SectionProps) {
  const { api, catalog, reload } = props;
  const [editing, setEditing] = useState<Incentive | null>(null);
  const [deleting, setDeleting] = useState<Incentive | null>(null);
  return (
    <Stack gap="xs">
      <Title order={3} size="h4" id="incentives">
        Incentives
      </Title>
      <Text size="sm" c="dimmed">
        An incentive overrides limits and grants add-ons on top of a plan (a promotion, a partner deal); apply it to an
        account from the account&apos;s page or the API.
      </Text>
      {catalog.incentives.length === 0 && <Hint>No incentives yet.</Hint>}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} style={{ alignItems: 'start' }}>
        {catalog.incentives.map((i) => (
          <Card component="section" withBorder key={i.id} aria-label={`Incentive ${i.name}`}>
            <Group justify="space-between" wrap="nowrap" align="flex-start">
              <div>
                <Text fw={600}>{i.name}</Text>
                <Text size="xs" c="dimmed">
                  <code>{i.id}</code>
                </Text>
              </div>
              {props.canEdit && (
                <RowActions
                  kind="incentives"
                  blocked={deleteRefusal('incentives', i.id, catalog)}

                  label={`incentive ${i.name}`}
                  onEdit={() => setEditing(i)}
                  onDelete={() => setDeleting(i)}
                />
              )}
            </Group>
            {i.description && <Text size="sm">{i.description}</Text>}
            <EditableArea canEdit={props.canEdit}>
              <Grants props={props} inc={i} />
            </EditableArea>
          </Card>
        ))}
        {props.canEdit && <NewIncentive api={api} reload={reload} />}
      </SimpleGrid>
      {editing && (
        <EditDialog opened title={`Edit incentive ${editing.name}`} onClose={() => setEditing(null)}>
          <EditIncentive props={props} inc={editing} onDone={async () => (await reload(), setEditing(null))} />
        </EditDialog>
      )}
      {deleting && <DeleteIncentive inc={deleting} props={props} onClose={() => setDeleting(null)} />}
    </Stack>
  );
}
