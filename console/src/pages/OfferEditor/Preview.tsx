// The live preview: what a buyer sees with the unsaved fields, as draft-preview answers, or the API's words for
// what is wrong with them.
import { Card, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import type { OffersPreviewDraftResponse } from '@offerkit/sdk';
import { ErrorText } from '../../ui';
import type { OfferCatalog } from './form';

export function Preview({
  preview,
  error,
  marked = false,
  catalog,
}: {
  preview: OffersPreviewDraftResponse | null;
  /** What is wrong with the unsaved fields, in words (the field named as the editor names it). */
  error: string | null;
  /** Whether the field the error concerns shows it under its input too. */
  marked?: boolean;
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
        {error && <ErrorText error={marked ? `${error} (marked in the editor)` : error} title="No preview" />}
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
