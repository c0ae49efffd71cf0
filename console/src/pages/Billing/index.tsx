// Checkouts, and the app's subscriptions (GET /apps/:appId/subscriptions) with pauses and when each resumes.
// In parts: the subscriptions (with their phone cards) and the checkouts each in a file, and the words for what the
// API answers in text.ts, a plain module with unit tests.
// A test app shows its test clock first, to move time forward and watch the lists follow.
import { Stack, Title } from '@mantine/core';
import { useState } from 'react';
import { Checkouts } from './Checkouts';
import { Subscriptions } from './Subscriptions';
import { TestClock } from './TestClock';

export function BillingPage() {
  // Bumped when the test clock moved: the lists read again what the dates changed.
  const [version, setVersion] = useState(0);
  return (
    <Stack>
      <Title order={2}>Checkouts and subscriptions</Title>
      <TestClock onMoved={() => setVersion((v) => v + 1)} />
      <Subscriptions version={version} />
      <Checkouts version={version} />
    </Stack>
  );
}
