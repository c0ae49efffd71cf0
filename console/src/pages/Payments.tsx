// The app's payment provider (PayPal): connect sandbox or live credentials (the API checks them with PayPal before
// it saves anything: that is the connection test), disconnect, and the notification URL PayPal calls.
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  Group,
  List,
  PasswordInput,
  SegmentedControl,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import type { PaymentsGetResponse } from '@offerkit/sdk';
import { appApi } from '../api';
import { useCan } from '../session';
import { ConfirmDialog, CopyField, ErrorText, Loading, useAction, useLoad } from '../ui';

type Env = 'sandbox' | 'live';

export function PaymentsPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const can = useCan(appId);
  const { data, error, setData } = useLoad(() => api.payments.get(), [appId]);
  const [disconnecting, setDisconnecting] = useState(false);
  const notifyUrl = data?.webhook?.url ?? `${window.location.origin}/payments/webhooks/${appId}`;
  return (
    <Stack maw={900}>
      <Title order={2}>Payments</Title>
      <Text size="sm" c="dimmed">
        Buyers pay through PayPal: checkouts, plan changes and cancel-flow discounts are made at PayPal with these
        credentials, and PayPal tells this service when a payment completes. Nothing counts as paid until PayPal
        confirms it.
      </Text>
      <Loading error={error}>
        {data && (
          <>
            <Status connection={data} />
            <Card withBorder>
              <Stack gap="xs">
                <Title order={3} size="h4">
                  Notification URL
                </Title>
                <Text size="sm">
                  PayPal sends payment and subscription notifications here. Connecting registers it with PayPal when
                  PayPal can reach this address; otherwise add it as a webhook in your PayPal app (developer dashboard)
                  once the service runs at a public address.
                </Text>
                <CopyField value={notifyUrl} label="Notification URL" />
              </Stack>
            </Card>
            {can('payments.connect') ? (
              <Connect appId={appId!} connection={data} onSaved={setData} />
            ) : (
              <Text size="sm" c="dimmed">
                Only owners and admins of the workspace can connect or disconnect the payment provider.
              </Text>
            )}
            {can('payments.disconnect') && data.connected && (
              <Card withBorder>
                <Stack gap="xs">
                  <Title order={3} size="h4">
                    Disconnect
                  </Title>
                  <Text size="sm">
                    Forgets the credentials. Subscriptions already live keep billing at PayPal: nothing is cancelled.
                  </Text>
                  <Button
                    color="red"
                    variant="light"
                    w="fit-content"
                    data-route="payments.disconnect"
                    onClick={() => setDisconnecting(true)}
                  >
                    Disconnect PayPal
                  </Button>
                </Stack>
              </Card>
            )}
            <ConfirmDialog
              opened={disconnecting}
              route="payments.disconnect"
              title={`Disconnect PayPal (${data.env ?? ''} ${data.client_id ?? ''})?`}
              confirmLabel="Disconnect"
              onClose={() => setDisconnecting(false)}
              onConfirm={async () => setData(await api.payments.disconnect())}
            >
              <Text size="sm">What stops working at once, until you connect again:</Text>
              <List size="sm" spacing={4}>
                <List.Item>
                  new checkouts: buying from a published offer answers “payment provider not connected”
                </List.Item>
                <List.Item>plan changes, cancellations and pauses made at PayPal, and cancel-flow discounts</List.Item>
                <List.Item>publishing or saving a live offer</List.Item>
                <List.Item>
                  PayPal’s notifications: renewals, failed payments and cancellations made at PayPal are no longer heard
                </List.Item>
              </List>
              <Text size="sm" fw={600}>
                Subscriptions already live keep billing at PayPal; cancel them there if they should stop.
              </Text>
            </ConfirmDialog>
          </>
        )}
      </Loading>
    </Stack>
  );
}

function Status({ connection }: { connection: PaymentsGetResponse }) {
  if (!connection.connected)
    return (
      <Alert color="yellow" title="Not connected" role="status">
        Connect PayPal below to sell: until then publishing an offer and every checkout answer “payment provider not
        connected”. Use sandbox credentials to try it without real money.
      </Alert>
    );
  return (
    <Card withBorder aria-label="Connection">
      <Stack gap={6}>
        <Group gap="xs">
          <Badge color="teal">connected</Badge>
          <Badge color={connection.env === 'live' ? 'red' : 'blue'} variant="light">
            {connection.env === 'live' ? 'live: real money' : 'sandbox'}
          </Badge>
          <Text size="sm">PayPal</Text>
        </Group>
        <Text size="sm" style={{ wordBreak: 'break-all' }}>
          Client id <Code>{connection.client_id}</Code>
        </Text>
        {connection.connected_at && (
          <Text size="xs" c="dimmed">
            Connected {new Date(connection.connected_at).toLocaleString()}
          </Text>
        )}
        <Text size="xs" c="dimmed">
          {connection.webhook
            ? `Notifications registered with PayPal (webhook ${connection.webhook.id}).`
            : 'Notifications not registered: PayPal cannot reach this address (a local or private one). Checkouts ' +
              'still complete: the service asks PayPal on its own schedule.'}
        </Text>
      </Stack>
    </Card>
  );
}

function Connect({
  appId,
  connection,
  onSaved,
}: {
  appId: string;
  connection: PaymentsGetResponse;
  onSaved: (c: PaymentsGetResponse) => void;
}) {
  const api = appApi(appId);
  const [env, setEnv] = useState<Env>((connection.env as Env | null) ?? 'sandbox');
  const [clientId, setClientId] = useState(connection.client_id ?? '');
  const [secret, setSecret] = useState('');
  const [done, setDone] = useState(false);
  const action = useAction(['env', 'client_id', 'client_secret']);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setDone(false);
    if (
      await action.run(async () =>
        onSaved(await api.payments.connect({ env, client_id: clientId, client_secret: secret })),
      )
    ) {
      setSecret('');
      setDone(true);
    }
  };
  // PayPal's refusal of the pair (422 "PayPal: ... (check client_id, client_secret and env)") goes under the secret.
  const refused =
    action.rawError && /check client_id, client_secret and env/.test(action.rawError) ? action.rawError : null;
  return (
    <Card withBorder>
      <form onSubmit={submit}>
        <Stack gap="sm">
          <Title order={3} size="h4">
            {connection.connected ? 'Replace the credentials' : 'Connect PayPal'}
          </Title>
          <Text size="sm" c="dimmed">
            From your PayPal app in the{' '}
            <Anchor href="https://developer.paypal.com/dashboard/applications" target="_blank" rel="noreferrer">
              PayPal developer dashboard
            </Anchor>
            . Connecting tests the credentials with PayPal first: a wrong pair or environment is refused here and
            nothing is saved. To test a saved connection again, connect with the same credentials.
          </Text>
          <Stack gap={4}>
            <Text size="sm" fw={500} id="env-label">
              Environment
            </Text>
            <SegmentedControl
              aria-labelledby="env-label"
              w="fit-content"
              value={env}
              onChange={(v) => setEnv(v as Env)}
              data={[
                { value: 'sandbox', label: 'Sandbox' },
                { value: 'live', label: 'Live' },
              ]}
            />
            <Text size="xs" c="dimmed">
              {env === 'sandbox'
                ? 'Test money: PayPal sandbox accounts pay, nothing is charged.'
                : 'Real money: buyers are charged.'}
            </Text>
            {action.field('env') && (
              <Text size="xs" c="red">
                {action.field('env')}
              </Text>
            )}
          </Stack>
          <TextInput
            label="Client id"
            required
            autoComplete="off"
            value={clientId}
            error={action.field('client_id')}
            onChange={(e) => setClientId(e.currentTarget.value)}
          />
          <PasswordInput
            label="Client secret"
            required
            autoComplete="off"
            description={connection.connected ? 'Never shown again once saved: enter it to reconnect.' : undefined}
            value={secret}
            error={action.field('client_secret') ?? refused ?? undefined}
            onChange={(e) => setSecret(e.currentTarget.value)}
          />
          <ErrorText error={refused ? null : action.error} />
          {done && (
            <Text size="sm" c="teal" role="status">
              PayPal accepted the credentials: connected ({env}).{' '}
              <Anchor component={Link} to={`/apps/${appId}/offers`}>
                Publish an offer
              </Anchor>
            </Text>
          )}
          <Button type="submit" w="fit-content" loading={action.busy} data-route="payments.connect">
            {connection.connected ? 'Test and reconnect' : 'Test and connect'}
          </Button>
        </Stack>
      </form>
    </Card>
  );
}
