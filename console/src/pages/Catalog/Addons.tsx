// Add-ons: create, edit and delete (the offer editor's order bumps sell them); which plans grant one is set in
// the limits grid, which incentives grant one in the incentive's card.
import { Button, Card, Group, SimpleGrid, Stack, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import type { Addon } from '../../api';
import { ConfirmDialog, ErrorText, useAction } from '../../ui';
import { EditDialog, Hint, names, offersUsing, orNull, RowActions, deleteRefusal, type SectionProps } from './shared';

interface AddonForm {
  id: string;
  name: string;
  description: string;
}
const EMPTY: AddonForm = { id: '', name: '', description: '' };
const ADDON_FIELDS = ['id', 'name', 'description'] as const;

function AddonFields({
  form,
  set,
  field,
  isNew,
}: {
  form: AddonForm;
  set: (f: AddonForm) => void;
  field: (name: string) => string | undefined;
  isNew: boolean;
}) {
  return (
    <Stack gap="xs">
      {isNew && (
        <TextInput
          label="Add-on id"
          required
          value={form.id}
          error={field('id')}
          onChange={(e) => set({ ...form, id: e.currentTarget.value })}
        />
      )}
      <TextInput
        label="Add-on name"
        required
        value={form.name}
        error={field('name')}
        onChange={(e) => set({ ...form, name: e.currentTarget.value })}
      />
      <Textarea
        label="Add-on description"
        autosize
        minRows={1}
        value={form.description}
        error={field('description')}
        onChange={(e) => set({ ...form, description: e.currentTarget.value })}
      />
    </Stack>
  );
}

function NewAddon({ api, reload }: Pick<SectionProps, 'api' | 'reload'>) {
  const [form, setForm] = useState<AddonForm>(EMPTY);
  const action = useAction(ADDON_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { id: form.id, name: form.name, description: orNull(form.description) };
    if (await action.run(() => api.addons.create(body))) {
      setForm(EMPTY);
      await reload();
    }
  };
  return (
    <Card withBorder miw={260}>
      <form onSubmit={submit} aria-label="New add-on">
        <Stack gap="xs">
          <Title order={3} size="h5">
            New add-on
          </Title>
          <AddonFields form={form} set={setForm} field={action.field} isNew />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="addons.create">
            Add add-on
          </Button>
        </Stack>
      </form>
    </Card>
  );
}

function EditAddon({ props, addon, onDone }: { props: SectionProps; addon: Addon; onDone: () => Promise<void> }) {
  const [form, setForm] = useState<AddonForm>({
    id: addon.id,
    name: addon.name,
    description: addon.description ?? '',
  });
  const action = useAction(ADDON_FIELDS);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body = { name: form.name, description: orNull(form.description) };
    if (await action.run(() => props.api.addons.update(addon.id, body))) await onDone();
  };
  return (
    <form onSubmit={submit}>
      <Stack gap="xs">
        <AddonFields form={form} set={setForm} field={action.field} isNew={false} />
        <ErrorText error={action.error} />
        <Button type="submit" w="fit-content" loading={action.busy} data-route="addons.update">
          Save add-on
        </Button>
      </Stack>
    </form>
  );
}

function DeleteAddon({ addon, props, onClose }: { addon: Addon; props: SectionProps; onClose: () => void }) {
  const { api, catalog, reload } = props;
  const plans = catalog.plans.filter((p) => p.addons.includes(addon.id)).map((p) => p.name);
  const incentives = catalog.incentives.filter((i) => i.addons.includes(addon.id)).map((i) => i.name);
  const offers = offersUsing(
    catalog.offers,
    (o) => o.bumps.some((b) => b.addon === addon.id) || o.plans.some((p) => p.extras.addons.includes(addon.id)),
  );
  return (
    <ConfirmDialog
      opened
      title={`Delete add-on ${addon.name}?`}
      confirmLabel={`Delete add-on ${addon.name}`}
      onClose={onClose}
      onConfirm={async () => (await api.addons.delete(addon.id), await reload())}
    >
      <Text size="sm">
        Add-on <strong>{addon.name}</strong> (<code>{addon.id}</code>) is deleted for good.
      </Text>
      <Text size="sm">
        On plans: <strong>{names(plans)}</strong>; on incentives: <strong>{names(incentives)}</strong>. The API refuses
        while it is on any, or while accounts own it (it says how many): remove it there first.
      </Text>
      <Text size="sm">
        Offers selling or granting it: <strong>{names(offers)}</strong>
        {offers.length ? ' — edit them too.' : ''}
      </Text>
    </ConfirmDialog>
  );
}

export function Addons(props: SectionProps) {
  const { api, catalog, reload } = props;
  const [editing, setEditing] = useState<Addon | null>(null);
  const [deleting, setDeleting] = useState<Addon | null>(null);
  return (
    <Stack gap="xs">
      <Title order={3} size="h4" id="addons">
        Add-ons
      </Title>
      <Text size="sm" c="dimmed">
        Extras a plan, an incentive or an offer&apos;s order bump grants. Which plans include one: the grid above.
      </Text>
      {catalog.addons.length === 0 && <Hint>No add-ons yet.</Hint>}
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} style={{ alignItems: 'start' }}>
        {catalog.addons.map((a) => (
          <Card component="section" withBorder key={a.id} aria-label={`Add-on ${a.name}`}>
            <Group justify="space-between" wrap="nowrap" align="flex-start">
              <div>
                <Text fw={600}>{a.name}</Text>
                <Text size="xs" c="dimmed">
                  <code>{a.id}</code> · on plans:{' '}
                  {names(catalog.plans.filter((p) => p.addons.includes(a.id)).map((p) => p.name))}
                </Text>
              </div>
              {props.canEdit && (
                <RowActions
                  kind="addons"
                  blocked={deleteRefusal('addons', a.id, catalog)}
                  label={`add-on ${a.name}`}
                  onEdit={() => setEditing(a)}
                  onDelete={() => setDeleting(a)}
                />
              )}
            </Group>
            {a.description && <Text size="sm">{a.description}</Text>}
          </Card>
        ))}
        {props.canEdit && <NewAddon api={api} reload={reload} />}
      </SimpleGrid>
      {editing && (
        <EditDialog opened title={`Edit add-on ${editing.name}`} onClose={() => setEditing(null)}>
          <EditAddon props={props} addon={editing} onDone={async () => (await reload(), setEditing(null))} />
        </EditDialog>
      )}
      {deleting && <DeleteAddon addon={deleting} props={props} onClose={() => setDeleting(null)} />}
    </Stack>
  );
}
