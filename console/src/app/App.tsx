import {
  Alert,
  AppShell,
  Burger,
  Button,
  Center,
  Group,
  Loader,
  NavLink,
  Select,
  Stack,
  Text,
  Title,
} from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useCallback, useEffect, useState } from 'react';
import { Link, Navigate, Route, Routes, useLocation, useNavigate, useParams } from 'react-router';
import { consoleApi, type Me } from '../api';
import { authClient } from '../auth';
import { AccountPage, AccountsPage } from '../pages/Accounts';
import { AnalyticsPage } from '../pages/Analytics';
import { AppPage, NewAppPage } from '../pages/AppPage';
import { BillingPage } from '../pages/Billing';
import { CancelFlowsPage } from '../pages/CancelFlows';
import { CatalogPage } from '../pages/Catalog';
import { McpPage } from '../pages/Mcp';
import { OffersPage } from '../pages/Offers';
import { PaymentsPage } from '../pages/Payments';
import { ConsentPage } from '../pages/Consent';
import { InvitePage, SetupPage, SignInPage } from '../pages/SignIn';
import { WebhooksPage } from '../pages/Webhooks';
import { atLeast, SessionProvider, useSession, type Role, type Session } from '../session';

export function App() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [roles, setRoles] = useState<Session['roles']>({});
  const [setupNeeded, setSetupNeeded] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(async () => {
    try {
      const [me, table] = await Promise.all([
        consoleApi.get<Me | { user: null; setup_needed: boolean }>('/me'),
        consoleApi.get<{ routes: Session['roles'] }>('/roles'),
      ]);
      setRoles(table.routes);
      if (me.user) setMe(me as Me);
      else {
        setSetupNeeded((me as { setup_needed: boolean }).setup_needed);
        setMe(null);
      }
    } catch (e) {
      setError((e as Error).message);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  if (error)
    return (
      <Alert color="red" m="xl" title="The console could not load">
        {error}
      </Alert>
    );
  if (me === undefined)
    return (
      <Center h="100vh">
        <Loader aria-label="Loading" />
      </Center>
    );
  if (me === null)
    return (
      <Routes>
        <Route path="/setup" element={<SetupPage onDone={load} />} />
        <Route path="/invite" element={<InvitePage onDone={load} />} />
        <Route path="*" element={setupNeeded ? <SetupPage onDone={load} /> : <SignInPage onDone={load} />} />
      </Routes>
    );
  return (
    <SessionProvider session={{ me, roles, reload: load }}>
      <Routes>
        <Route path="/oauth/consent" element={<ConsentPage />} />
        <Route path="*" element={<Shell />} />
      </Routes>
    </SessionProvider>
  );
}

/** The app to open: the first of the person's own workspaces, the read-only demo's only when they have none. */
function firstApp(me: Me): string | undefined {
  const own = me.workspaces.filter((w) => !w.demo).flatMap((w) => w.apps);
  return (own[0] ?? me.workspaces.flatMap((w) => w.apps)[0])?.id;
}

/** The first app of the person's own workspaces: the one the app picker shows when the address names none. */
function ownFirstApp(me: Me): string | undefined {
  return me.workspaces.filter((w) => !w.demo).flatMap((w) => w.apps)[0]?.id;
}

function Shell() {
  const { me, reload } = useSession();
  const [opened, { toggle, close }] = useDisclosure();
  const location = useLocation();
  useEffect(close, [location.pathname, close]);
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 230, breakpoint: 'sm', collapsed: { mobile: !opened } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group wrap="nowrap" gap="xs">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Menu" />
            <Title order={1} size="h4">
              offerkit
            </Title>
          </Group>
          <Group wrap="nowrap" gap="xs">
            <Text size="sm" c="dimmed" visibleFrom="sm">
              {me.user.email}
            </Text>
            <Button
              variant="subtle"
              size="compact-sm"
              onClick={async () => {
                await authClient.signOut();
                window.location.assign('/console/');
              }}
            >
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="sm">
        <Routes>
          <Route path="/apps/:appId/*" element={<Nav />} />
          <Route path="*" element={<Nav />} />
        </Routes>
      </AppShell.Navbar>
      <AppShell.Main>
        <Routes>
          <Route path="/" element={<Home />} />
          <Route path="/setup" element={<Home />} />
          <Route path="/invite" element={<InvitePage onDone={reload} />} />
          <Route path="/new-app" element={<NewAppPage />} />
          <Route path="/apps/:appId" element={<AppPage />} />
          <Route path="/apps/:appId/catalog" element={<CatalogPage />} />
          <Route path="/apps/:appId/accounts" element={<AccountsPage />} />
          <Route path="/apps/:appId/accounts/:accountId" element={<AccountPage />} />
          <Route path="/apps/:appId/analytics" element={<AnalyticsPage />} />
          <Route path="/apps/:appId/webhooks" element={<WebhooksPage />} />
          <Route path="/apps/:appId/offers" element={<OffersPage />} />
          <Route path="/apps/:appId/offers/:offerId" element={<OffersPage />} />
          <Route path="/apps/:appId/billing" element={<BillingPage />} />
          <Route path="/apps/:appId/cancel-flows" element={<CancelFlowsPage />} />
          <Route path="/apps/:appId/cancel-flows/:flowId" element={<CancelFlowsPage />} />
          <Route path="/apps/:appId/mcp" element={<McpPage />} />
          <Route path="/apps/:appId/payments" element={<PaymentsPage />} />
          <Route path="*" element={<Text>Nothing here. Pick an app on the left.</Text>} />
        </Routes>
      </AppShell.Main>
    </AppShell>
  );
}

function Home() {
  const { me, roles } = useSession();
  const id = firstApp(me);
  const ownsEmpty =
    !me.workspaces.some((w) => !w.demo && w.apps.length) &&
    me.workspaces.some((w) => !w.demo && atLeast(w.role as Role, roles['console.createApp']?.role ?? 'owner'));
  // After setup the owner's own workspace has no app yet: they stay here (create the first app), not on the demo's.
  if (id && !ownsEmpty) return <Navigate to={`/apps/${id}`} replace />;
  return (
    <Stack maw={560}>
      <Title order={2}>Welcome, {me.user.name}</Title>
      <Text>
        Your workspace has no app yet. An app is one product: it owns plans, accounts, usage, offers and webhooks.
      </Text>
      <Button component={Link} to="/new-app" w="fit-content" data-route="console.createApp">
        Create your first app
      </Button>
    </Stack>
  );
}

const SECTIONS: [string, string][] = [
  ['', 'App and keys'],
  ['/catalog', 'Catalog'],
  ['/accounts', 'Accounts'],
  ['/analytics', 'Analytics'],
  ['/payments', 'Payments'],
  ['/offers', 'Offers'],
  ['/billing', 'Checkouts and subscriptions'],
  ['/cancel-flows', 'Cancel flows'],
  ['/webhooks', 'Webhooks'],
  ['/mcp', 'MCP server'],
];

function Nav() {
  const { me } = useSession();
  const { appId } = useParams();
  const navigate = useNavigate();
  const location = useLocation();
  // Without an app in the address, the picker shows the person's own first app, never the demo's implicitly: with no
  // app of their own it shows its placeholder, and the app's sections wait until one is picked (the demo stays
  // pickable).
  const current = appId ?? ownFirstApp(me);
  const { roles } = useSession();
  const owns = me.workspaces.some(
    (w) => !w.demo && atLeast(w.role as Role, roles['console.createApp']?.role ?? 'owner'),
  );
  return (
    <Stack gap="xs">
      <Select
        label="App"
        value={current ?? null}
        data={me.workspaces
          .filter((w) => w.apps.length)
          .map((w) => ({
            group: w.demo ? `${w.name} (read-only demo)` : w.name,
            items: w.apps.map((a) => ({ value: a.id, label: a.name })),
          }))}
        onChange={(v) => v && navigate(`/apps/${v}`)}
        allowDeselect={false}
        placeholder="Pick an app"
      />
      {current &&
        SECTIONS.map(([suffix, label]) => {
          const to = `/apps/${current}${suffix}`;
          const active = suffix === '' ? location.pathname === to : location.pathname.startsWith(to);
          return <NavLink key={label} component={Link} to={to} label={label} active={active} />;
        })}
      {owns && (
        <NavLink
          component={Link}
          to="/new-app"
          label="+ New app"
          active={location.pathname === '/new-app'}
          data-route="console.createApp"
        />
      )}
    </Stack>
  );
}
