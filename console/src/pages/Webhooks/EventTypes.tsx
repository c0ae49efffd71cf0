// The event types tab: the catalog of event types, each with its description and a sample payload.
import { Accordion, Card, Code, Stack, Text, Title } from '@mantine/core';
import { eventTypes } from '../../api';
import { Loading, useLoad } from '../../ui';
import { Json, withCode } from './shared';

export function EventTypes() {
  const types = useLoad(() => eventTypes(), []);
  return (
    <Card withBorder>
      <Stack gap="xs">
        <div>
          <Title order={3} size="h5">
            Event types
          </Title>
          <Text size="xs" c="dimmed">
            What each event carries, with a sample payload. Subscribe an endpoint to some of them, or to <Code>*</Code>{' '}
            for every type, including ones added later.
          </Text>
        </div>
        <Loading error={types.error}>
          {types.data &&
            (types.data.length === 0 ? (
              <Text c="dimmed" size="sm">
                The service lists no event types.
              </Text>
            ) : (
              <Accordion variant="contained" aria-label="Event types">
                {types.data.map((t) => (
                  <Accordion.Item key={t.type} value={t.type}>
                    <Accordion.Control aria-label={`Event type ${t.type}`}>
                      <Text size="sm" fw={600} ff="monospace">
                        {t.type}
                      </Text>
                      <Text size="xs" c="dimmed">
                        {withCode(t.description)}
                      </Text>
                    </Accordion.Control>
                    <Accordion.Panel>
                      <Json
                        value={{
                          id: 'evt_...',
                          type: t.type,
                          created_at: '2026-01-01T00:00:00.000Z',
                          app_id: 'app_...',
                          data: t.sample,
                        }}
                        label={`Sample ${t.type}`}
                      />
                    </Accordion.Panel>
                  </Accordion.Item>
                ))}
              </Accordion>
            ))}
        </Loading>
      </Stack>
    </Card>
  );
}
