// The app's test clock (GET /apps/:appId/test-clock): its time, and buttons that move it forward so renewals, failed
// payments, pause ends and expiries happen now instead of in a month. Shown only where the server would move it: a
// test app (not live payments, not the demo), to a person who may write (members and above).
import { Alert, Button, Card, Group, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { useParams } from 'react-router';
import { appApi } from '../../api';
import { useSession } from '../../session';
import { ErrorText, useAction, useLoad } from '../../ui';

const DAY = 86_400_000;

/**
 * Calendar months in UTC as Date counts them. Never before the server's billing month (src/apps/clock.ts, PayPal's
 * dates: a day the month lacks becomes the 1st of the next; Date overflows to the 1st..3rd), so one press passes the
 * next monthly renewal.
 */
function addMonths(from: Date, months: number): Date {
  const d = new Date(from);
  d.setUTCMonth(d.getUTCMonth() + months);
  return d;
}

/** `2026-12-28 14:05 UTC`: the clock reads in UTC, like every date the API answers. */
const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

function ahead(offsetMs: number): string {
  if (offsetMs < 60_000) return 'real time';
  const days = Math.floor(offsetMs / DAY);
  if (days >= 1) return `${days} day${days === 1 ? '' : 's'} ahead of real time`;
  const minutes = Math.round(offsetMs / 60_000);
  return minutes >= 60 ? `${Math.round(minutes / 60)} h ahead of real time` : `${minutes} min ahead of real time`;
}

export function TestClock({ onMoved }: { onMoved: () => void }) {
  const { appId } = useParams();
  const api = appApi(appId!);
  const { me } = useSession();
  const workspace = me.workspaces.find((w) => w.apps.some((a) => a.id === appId));
  // The server moves it for members and above, never on the demo; the card is not shown where it would refuse.
  const mayWrite = !!workspace && !workspace.demo && workspace.role !== 'viewer';
  const clock = useLoad(() => api.testClock.get(), [appId]);
  const move = useAction(['to']);
  const [date, setDate] = useState('');
  const [running, setRunning] = useState<string | null>(null);
  if (!mayWrite || !clock.data || clock.data.live) return null;
  const now = new Date(clock.data.now);

  const advance = (to: Date) =>
    move.run(async () => {
      const r = await api.testClock.advance({ to: to.toISOString() });
      setRunning(r.pending ? to.toISOString() : null);
      setDate('');
      await clock.reload();
      onMoved();
    });
  const picked = date ? new Date(`${date}T${now.toISOString().slice(11, 19)}Z`) : null;
  return (
    <Card withBorder aria-labelledby="test-clock-title">
      <Stack gap="xs">
        <Group justify="space-between" wrap="wrap" gap="xs">
          <Title order={3} size="h5" id="test-clock-title">
            Test clock
          </Title>
          <Text size="sm" c="dimmed">
            {ahead(clock.data.offset_ms)}
          </Text>
        </Group>
        <Text size="sm">
          This test app&rsquo;s time is <strong data-testid="test-clock-now">{utc(clock.data.now)}</strong>. Moving it
          forward bills the cycles due at the PayPal stand-in and runs every renewal, payment retry, pause end and
          expiry due by then, in order.
        </Text>
        <Group gap="xs" wrap="wrap" align="flex-end">
          <Button
            size="xs"
            variant="light"
            data-route="testClock.advance"
            loading={move.busy}
            onClick={() => advance(new Date(now.getTime() + DAY))}
          >
            +1 day
          </Button>
          <Button
            size="xs"
            variant="light"
            data-route="testClock.advance"
            loading={move.busy}
            onClick={() => advance(addMonths(now, 1))}
          >
            +1 month
          </Button>
          <TextInput
            size="xs"
            type="date"
            label="Move to"
            aria-label="Move the clock to this date"
            min={new Date(now.getTime() + DAY).toISOString().slice(0, 10)}
            value={date}
            error={move.field('to')}
            onChange={(e) => setDate(e.currentTarget.value)}
          />
          <Button
            size="xs"
            data-route="testClock.advance"
            disabled={!picked}
            loading={move.busy}
            onClick={() => picked && advance(picked)}
          >
            Move
          </Button>
        </Group>
        {running && (
          <Alert color="blue" title="Still running">
            Some dates take longer: the clock reaches {utc(running)} within a minute. Reload to see it.
          </Alert>
        )}
        <ErrorText error={move.error} title="Not moved" />
      </Stack>
    </Card>
  );
}
