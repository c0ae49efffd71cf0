// What the webhooks page's tabs share: the endpoint's shape, status colours, and the JSON and code-span views.
import { Button, Code, CopyButton, Group, Stack, Text } from '@mantine/core';
import { type ReactNode } from 'react';
import type { WebhooksCreateBody } from '@offerkit/sdk';

export type EventType = WebhooksCreateBody['events'][number];

export interface Endpoint {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  disabled_reason: string | null;
  stats: { total: number; succeeded: number; failed: number; pending: number };
}

export const COLORS = { pending: 'yellow', succeeded: 'teal', failed: 'red' } as const;
export const TABS = ['endpoints', 'events', 'types'] as const;
export type Tab = (typeof TABS)[number];

/** Text with `code` spans, as the event catalog words its descriptions. */
export function withCode(text: string): ReactNode[] {
  return text.split('`').map((part, i) => (i % 2 ? <Code key={i}>{part}</Code> : part));
}

export function Json({ value, label }: { value: unknown; label: string }) {
  const text = JSON.stringify(value, null, 2);
  return (
    <Stack gap={4}>
      <Group justify="space-between">
        <Text size="xs" fw={600}>
          {label}
        </Text>
        <CopyButton value={text}>
          {({ copied, copy }) => (
            <Button size="compact-xs" variant="subtle" onClick={copy}>
              {copied ? 'Copied' : 'Copy'}
            </Button>
          )}
        </CopyButton>
      </Group>
      <Code block style={{ maxHeight: 320, overflow: 'auto' }} aria-label={label}>
        {text}
      </Code>
    </Stack>
  );
}
