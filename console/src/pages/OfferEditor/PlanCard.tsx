// One plan of an offer: its prices (interval, amount, currency, cycles at the offer price) beside the list prices,
// its place in the order, and its extras.
import {
  ActionIcon,
  Box,
  Button,
  Card,
  CloseButton,
  Group,
  NumberInput,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
} from '@mantine/core';
import { num } from '../../forms';
import { Extras } from './Extras';
import {
  listPrice,
  nextPrice,
  priceLabel,
  type CatalogPlan,
  type Interval,
  type OfferCatalog,
  type PlanForm,
  type PriceForm,
} from './form';

/** The inputs of one price, by the field names the API's 400 uses. */
export const PRICE_FIELDS = ['interval', 'amount', 'currency', 'cycles'] as const;

export function PlanCard({
  row,
  plan,
  catalog,
  first,
  last,
  only,
  onChange,
  onMove,
  onRemove,
  fieldError,
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
  /** The save's problem for a path under this plan (`prices.0.amount`). */
  fieldError?: (path: string) => string | undefined;
}) {
  const name = plan?.name ?? row.plan;
  const setPrice = (k: number, patch: Partial<PriceForm>) =>
    onChange({ prices: row.prices.map((x, j) => (j === k ? { ...x, ...patch } : x)) });
  const addPrice = () => onChange({ prices: [...row.prices, nextPrice(row, plan)] });
  const label = (x: PriceForm) => priceLabel(row, x);
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
                    error={fieldError?.(`prices.${k}.interval`)}
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
                    error={fieldError?.(`prices.${k}.amount`)}
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
                    error={fieldError?.(`prices.${k}.currency`)}
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
                    error={fieldError?.(`prices.${k}.cycles`)}
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
