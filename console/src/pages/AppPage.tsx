import {
  Badge,
  Button,
  Card,
  CopyButton,
  Group,
  Modal,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { appApi, consoleApi } from '../api';
import { atLeast, useCan, useCanInWorkspace, useSession, type Role } from '../session';
import { MembersSection } from './Members';
import { ConfirmDialog, ErrorText, Loading, useAction, useLoad } from '../ui';
import { GettingStarted } from './GettingStarted';

/**
 * A key with its actions. The secret key arrives masked (`[redacted]`): "Reveal" asks the server for it (owners and
 * admins; each reveal is logged), so the browser holds it only when a person asked to see it.
 */
function KeyRow({
  label,
  value,
  reveal,
  canReveal,
  regenerate,
  onRegenerate,
}: {
  label: string;
  value: string;
  reveal?: { action: string; run: () => Promise<string> };
  canReveal: boolean;
  /** The regenerate action's name when the person may use it (the button shows only then). */
  regenerate: string | null;
  onRegenerate: () => Promise<unknown>;
}) {
  const [shown, setShown] = useState(false);
  const [revealed, setRevealed] = useState<string | null>(null);
  const [confirm, setConfirm] = useState(false);
  const [renewed, setRenewed] = useState(false);
  const action = useAction();
  const known = reveal ? revealed : value;
  const toggle = async () => {
    if (shown) return setShown(false);
    if (reveal && revealed === null) {
      let key: string | null = null;
      if (!(await action.run(async () => (key = await reveal.run())))) return;
      setRevealed(key);
    }
    setShown(true);
  };
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Text fw={600}>{label}</Text>
        <Text ff="monospace" size="sm" style={{ wordBreak: 'break-all' }} aria-label={`${label} value`}>
          {shown && known ? known : `${(known ?? 'key_').slice(0, 4)}${'•'.repeat(20)}`}
        </Text>
        <Group gap="xs">
          {(!reveal || canReveal) && (
            <Button
              size="xs"
              variant="default"
              data-route={reveal && !revealed ? reveal.action : undefined}
              onClick={() => void toggle()}
              loading={action.busy && !confirm}
            >
              {shown ? 'Hide' : 'Reveal'}
            </Button>
          )}
          {known && (
            <CopyButton value={known}>
              {({ copied, copy }) => (
                <Button size="xs" variant="default" onClick={copy}>
                  {copied ? 'Copied' : 'Copy'}
                </Button>
              )}
            </CopyButton>
          )}
          {regenerate && (
            <Button size="xs" color="red" variant="light" data-route={regenerate} onClick={() => setConfirm(true)}>
              Regenerate
            </Button>
          )}
        </Group>
        {reveal && !canReveal && (
          <Text size="xs" c="dimmed">
            Only owners and admins of the workspace can reveal or regenerate the secret key.
          </Text>
        )}
        {reveal && renewed && !shown && (
          <Text size="xs" c="dimmed" role="status">
            A new secret key is in place. Reveal it to copy it: the page never receives a key you did not ask to see.
          </Text>
        )}
        <ErrorText error={action.error} />
      </Stack>
      <Modal opened={confirm} onClose={() => setConfirm(false)} title={`Regenerate the ${label.toLowerCase()}?`}>
        <Stack>
          <Text size="sm">
            {label === 'Secret key'
              ? 'The old secret key stops working at once: every server, job and MCP client that calls the API with ' +
                'it gets 401 until it has the new one, and every account token made with it stops working too.'
              : 'The old publishable key stops working at once: every page that embeds the components or calls the ' +
                'API with it (pricing tables, paywalls, usage meters) fails until it has the new one.'}{' '}
            Update every place that uses it.
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setConfirm(false)}>
              Keep the old key
            </Button>
            <Button
              color="red"
              loading={action.busy}
              data-route={regenerate ?? undefined}
              onClick={async () => {
                if (await action.run(onRegenerate)) setRenewed(true);
                setRevealed(null);
                setShown(false);
                setConfirm(false);
              }}
            >
              Regenerate now
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Card>
  );
}

export function AppPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const { me } = useSession();
  const workspace = me.workspaces.find((w) => w.apps.some((a) => a.id === appId));
  // What the server allows each role (the route table, docs/security.md); the buttons follow it, the server decides.
  const can = useCan(appId);
  const canPeople = useCanInWorkspace(workspace?.id);
  const { data: app, error, reload } = useLoad(() => api.apps.get(), [appId]);
  const save = useAction();
  const [form, setForm] = useState<{ name: string; checkout_url: string } | null>(null);
  const values = form ?? (app ? { name: app.name, checkout_url: app.checkout_url ?? '' } : null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!values) return;
    if (await save.run(() => api.apps.update({ name: values.name, checkout_url: values.checkout_url || null }))) {
      setForm(null);
      await reload();
    }
  };
  return (
    <Stack maw={900}>
      <Group justify="space-between">
        <Title order={2}>{app?.name ?? 'App'}</Title>
        {workspace && <Badge variant="light">{workspace.demo ? 'Demo workspace (read-only)' : workspace.name}</Badge>}
      </Group>
      <GettingStarted appId={appId!} />
      <Loading error={error}>
        {app && values && (
          <>
            <Text size="sm" c="dimmed">
              App id <code>{app.id}</code> · created {new Date(app.created_at).toLocaleDateString()}
            </Text>
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <KeyRow
                label="Secret key"
                value={app.api_key}
                canReveal={can('console.revealSecretKey')}
                reveal={{
                  action: 'console.revealSecretKey',
                  run: async () =>
                    (
                      await consoleApi.post<{ api_key: string }>(
                        `/apps/${encodeURIComponent(app.id)}/secret-key/reveal`,
                      )
                    ).api_key,
                }}
                regenerate={can('apps.regenerateSecretKey') ? 'apps.regenerateSecretKey' : null}
                // The answer is `[redacted]` to a person: the new key is read only through the logged reveal.
                onRegenerate={async () => (await api.apps.regenerateSecretKey(), reload())}
              />
              <KeyRow
                label="Publishable key"
                value={app.public_key}
                canReveal
                regenerate={can('apps.regeneratePublicKey') ? 'apps.regeneratePublicKey' : null}
                onRegenerate={async () => (await api.apps.regeneratePublicKey(), reload())}
              />
            </SimpleGrid>
            <Card withBorder>
              <form onSubmit={submit}>
                <Stack>
                  <Title order={3} size="h4">
                    Settings
                  </Title>
                  {!can('apps.update') && (
                    <Text size="sm" c="dimmed">
                      {workspace?.demo
                        ? 'The demo workspace is read-only.'
                        : 'Members, admins and owners change these settings; you can read them.'}
                    </Text>
                  )}
                  <TextInput
                    label="Name"
                    required
                    readOnly={!can('apps.update')}
                    value={values.name}
                    onChange={(e) => setForm({ ...values, name: e.currentTarget.value })}
                  />
                  <TextInput
                    label="Checkout page URL"
                    description="Your pricing page; upgrade links in 402 answers point here."
                    placeholder="https://example.com/pricing"
                    readOnly={!can('apps.update')}
                    value={values.checkout_url}
                    onChange={(e) => setForm({ ...values, checkout_url: e.currentTarget.value })}
                  />
                  <ErrorText error={save.error} />
                  {can('apps.update') && (
                    <Button type="submit" w="fit-content" loading={save.busy} data-route="apps.update">
                      Save settings
                    </Button>
                  )}
                </Stack>
              </form>
            </Card>
            {workspace && canPeople('console.members') && (
              <MembersSection workspaceId={workspace.id} workspaceName={workspace.name} role={workspace.role} />
            )}
            {can('apps.delete') && <DeleteApp appId={app.id} name={app.name} />}
          </>
        )}
      </Loading>
    </Stack>
  );
}

/** Deleting the app (owners): everything it owns goes with it; the dialog says what, and what keeps running. */
function DeleteApp({ appId, name }: { appId: string; name: string }) {
  const [open, setOpen] = useState(false);
  const { reload } = useSession();
  const navigate = useNavigate();
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h4">
          Delete this app
        </Title>
        <Text size="sm">Removes the app and everything it owns. Only owners can do this.</Text>
        <Button color="red" variant="light" w="fit-content" data-route="apps.delete" onClick={() => setOpen(true)}>
          Delete app
        </Button>
      </Stack>
      <ConfirmDialog
        opened={open}
        route="apps.delete"
        title={`Delete the app ${name}?`}
        confirmLabel={`Delete ${name}`}
        onClose={() => setOpen(false)}
        onConfirm={async () => {
          await appApi(appId).apps.delete();
          await reload();
          navigate('/', { replace: true });
        }}
      >
        <Text size="sm">
          Deleted at once and for good: its plans, entitlements, add-ons, incentives, accounts with their usage and
          events, offers, cancel flows, webhook endpoints with their deliveries, the payment connection and the MCP
          settings. Both keys stop working, so every server and page using them fails.
        </Text>
        <Text size="sm" fw={600}>
          Subscriptions already live keep billing at PayPal: cancel them there first if they should stop.
        </Text>
      </ConfirmDialog>
    </Card>
  );
}

export function NewAppPage() {
  const { me, roles, reload } = useSession();
  const navigate = useNavigate();
  const least = roles['console.createApp']?.role ?? 'owner';
  const owned = me.workspaces.filter((w) => !w.demo && atLeast(w.role as Role, least));
  const [name, setName] = useState('');
  const action = useAction(['name']);
  if (!owned.length) return <Text>Only workspace owners and admins create apps.</Text>;
  return (
    <Card withBorder maw={520}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          await action.run(async () => {
            const app = await consoleApi.post<{ id: string }>(`/workspaces/${owned[0].id}/apps`, { name });
            await reload();
            // The new app's home: its getting-started checklist says what to do first (the catalog is its first step).
            navigate(`/apps/${app.id}`);
          });
        }}
      >
        <Stack>
          <Title order={2} size="h3">
            New app in {owned[0].name}
          </Title>
          <TextInput
            label="App name"
            required
            error={action.field('name')}
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
          />
          <ErrorText error={action.error} />
          <Button type="submit" w="fit-content" loading={action.busy} data-route="console.createApp">
            Create app
          </Button>
        </Stack>
      </form>
    </Card>
  );
}
