// Checkouts, and the app's subscriptions (GET /apps/:appId/subscriptions) with pauses and when each resumes.
// In parts: the subscriptions (with their phone cards) and the checkouts each in a file, and the words for what the
// API answers in text.ts, a plain module with unit tests.
import { Stack, Title } from '@mantine/core';
import { Checkouts } from './Checkouts';
import { Subscriptions } from './Subscriptions';

export function BillingPage() {
  return (
    <Stack>
      <Title order={2}>Checkouts and subscriptions</Title>
      <Subscriptions />
      <Checkouts />
    </Stack>
  );
}
