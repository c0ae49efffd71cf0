// Agent guard-rails of an MCP connection (or of the app's key-based MCP use): a spend cap on the money its tools
// start in checkouts and plan changes, and usage caps per entitlement, each per UTC day or month. Used on the MCP
// page (operators) and on the consent page (the person approving a client).
import { ActionIcon, Button, Group, NumberInput, Select, Stack, Text, TextInput } from '@mantine/core';

type Period = 'day' | 'month';
export interface SpendCap {
  amount: number;
  currency: string;
  period: Period;
}
export interface UsageCap {
  entitlement_id: string;
  amount: number;
  period: Period;
}
export interface Guardrails {
  spend_cap: SpendCap | null;
  usage_caps: UsageCap[];
}
interface Progress {
  used: number;
  left: number;
  resets_at: string;
}
export interface GuardrailsView {
  spend_cap: (SpendCap & Progress) | null;
  usage_caps: (UsageCap & Progress)[];
}

export const NO_CAPS: Guardrails = { spend_cap: null, usage_caps: [] };
const PERIODS = [
  { value: 'day', label: 'per day' },
  { value: 'month', label: 'per month' },
];

/** The caps alone (what the routes take), without what was used. */
export function capsOf(view: GuardrailsView | null): Guardrails {
  if (!view) return NO_CAPS;
  const { spend_cap: s, usage_caps: u } = view;
  return {
    spend_cap: s ? { amount: s.amount, currency: s.currency, period: s.period } : null,
    usage_caps: u.map((c) => ({ entitlement_id: c.entitlement_id, amount: c.amount, period: c.period })),
  };
}

/** One line per cap: "99 of 100 USD per month (1 left)". */
export function GuardrailsSummary({ view }: { view: GuardrailsView | null }) {
  if (!view || (!view.spend_cap && view.usage_caps.length === 0))
    return (
      <Text size="xs" c="dimmed">
        No caps
      </Text>
    );
  return (
    <Stack gap={0}>
      {view.spend_cap && (
        <Text size="xs">
          Spend: {view.spend_cap.used} of {view.spend_cap.amount} {view.spend_cap.currency} per {view.spend_cap.period}{' '}
          ({view.spend_cap.left} left)
        </Text>
      )}
      {view.usage_caps.map((c) => (
        <Text size="xs" key={c.entitlement_id}>
          {c.entitlement_id}: {c.used} of {c.amount} per {c.period} ({c.left} left)
        </Text>
      ))}
    </Stack>
  );
}

/** Edits caps; an empty spend amount means no spend cap. */
export function GuardrailsEditor({
  value,
  onChange,
  entitlements,
}: {
  value: Guardrails;
  onChange: (next: Guardrails) => void;
  entitlements?: string[];
}) {
  const spend = value.spend_cap;
  const setSpend = (patch: Partial<SpendCap> | null) =>
    onChange({
      ...value,
      spend_cap: patch === null ? null : { ...(spend ?? { amount: 0, currency: 'USD', period: 'month' }), ...patch },
    });
  const setUsage = (i: number, patch: Partial<UsageCap> | null) =>
    onChange({
      ...value,
      usage_caps:
        patch === null
          ? value.usage_caps.filter((_, j) => j !== i)
          : value.usage_caps.map((c, j) => (j === i ? { ...c, ...patch } : c)),
    });
  return (
    <Stack gap="xs">
      <Text size="sm" fw={500}>
        Spend cap
      </Text>
      <Text size="xs" c="dimmed">
        Money in checkout links and plan changes the assistant may start. Empty: no cap.
      </Text>
      <Group gap="xs" align="flex-end" wrap="wrap">
        <NumberInput
          aria-label="Spend cap amount"
          placeholder="No cap"
          min={0}
          w={120}
          value={spend?.amount ?? ''}
          onChange={(v) => setSpend(v === '' ? null : { amount: Number(v) })}
        />
        <TextInput
          aria-label="Spend cap currency"
          w={80}
          maxLength={3}
          disabled={!spend}
          value={spend?.currency ?? 'USD'}
          onChange={(e) => setSpend({ currency: e.currentTarget.value.toUpperCase() })}
        />
        <Select
          aria-label="Spend cap period"
          w={130}
          disabled={!spend}
          allowDeselect={false}
          data={PERIODS}
          value={spend?.period ?? 'month'}
          onChange={(v) => v && setSpend({ period: v as Period })}
        />
      </Group>
      <Text size="sm" fw={500} mt="xs">
        Usage caps
      </Text>
      <Text size="xs" c="dimmed">
        Usage the assistant may record per entitlement (increment_usage, add_usage_amount).
      </Text>
      {value.usage_caps.map((c, i) => (
        <Group key={i} gap="xs" align="flex-end" wrap="wrap">
          {entitlements?.length ? (
            <Select
              aria-label="Usage cap entitlement"
              w={150}
              allowDeselect={false}
              data={entitlements}
              value={c.entitlement_id || null}
              onChange={(v) => v && setUsage(i, { entitlement_id: v })}
            />
          ) : (
            <TextInput
              aria-label="Usage cap entitlement"
              placeholder="entitlement id"
              w={150}
              value={c.entitlement_id}
              onChange={(e) => setUsage(i, { entitlement_id: e.currentTarget.value })}
            />
          )}
          <NumberInput
            aria-label="Usage cap amount"
            min={0}
            w={100}
            allowDecimal={false}
            value={c.amount}
            onChange={(v) => setUsage(i, { amount: Number(v) || 0 })}
          />
          <Select
            aria-label="Usage cap period"
            w={115}
            allowDeselect={false}
            data={PERIODS}
            value={c.period}
            onChange={(v) => v && setUsage(i, { period: v as Period })}
          />
          <ActionIcon variant="subtle" color="red" aria-label="Remove usage cap" onClick={() => setUsage(i, null)}>
            ×
          </ActionIcon>
        </Group>
      ))}
      <Button
        size="xs"
        variant="light"
        w="fit-content"
        onClick={() =>
          onChange({
            ...value,
            usage_caps: [...value.usage_caps, { entitlement_id: entitlements?.[0] ?? '', amount: 100, period: 'day' }],
          })
        }
      >
        Add a usage cap
      </Button>
    </Stack>
  );
}
