// When the offer sells (start and expiry) and the offer shown instead when it cannot be bought.
import { Group, Select, Stack, TextInput, Title } from '@mantine/core';
import type { OfferCatalog, OfferForm } from './form';
import type { SetForm } from './state';

export function ScheduleSection({
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
