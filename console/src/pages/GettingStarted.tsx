// Getting started: the app's home shows where the app stands on the way to its first paid subscription, read from
// the real state (plans, the payment provider, offers, the publishable key's first use, usage and checkouts), each
// step linking to where it is done, and copy-paste snippets for the components and the SDK with this app's ids.
import {
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  CopyButton,
  Group,
  Stack,
  Tabs,
  Text,
  ThemeIcon,
  Title,
} from '@mantine/core';
import { Link } from 'react-router';
import { appApi } from '../api';
import { Loading, useLoad } from '../ui';

/** Where the app stands. `null`: could not be read (a role that may not, or an error): the step shows "unknown". */
export interface SetupState {
  plans: number | null;
  paymentsConnected: boolean | null;
  offerPublished: string | null | false;
  componentsUsedAt: string | null;
  firstEvent: boolean | null;
}

async function loadState(appId: string) {
  const api = appApi(appId);
  const settled = <T,>(p: PromiseLike<T>) =>
    Promise.resolve(p).then(
      (v) => v,
      () => null,
    );
  const [app, plans, payments, offers, usage, checkouts] = await Promise.all([
    api.apps.get(),
    settled(api.plans.list()),
    settled(api.payments.get()),
    settled(api.offers.list()),
    settled(api.analytics.events({ limit: 1 })),
    settled(api.checkouts.list({ status: 'completed', limit: 1 })),
  ]);
  const published = offers?.find((o) => o.status === 'active');
  const state: SetupState = {
    plans: plans ? plans.length : null,
    paymentsConnected: payments ? payments.connected : null,
    offerPublished: offers ? (published?.id ?? false) : null,
    componentsUsedAt: app.publishable_first_used_at,
    firstEvent: usage || checkouts ? !!(usage?.data.length || checkouts?.data.length) : null,
  };
  return { app, state };
}

/** The components, as a page of the customer's site includes them: this app's ids, this service's address. */
export function componentsSnippet(origin: string, appId: string, publishableKey: string, offer: string | null) {
  const conn = `base-url="${origin}" app-id="${appId}" publishable-key="${publishableKey}"`;
  return [
    `<script type="module" src="${origin}/elements/assets/offerkit-elements.js"></script>`,
    '',
    `<offerkit-pricing-table ${conn}`,
    `  offer="${offer ?? 'YOUR_OFFER_ID'}" account="YOUR_CUSTOMER_ID"></offerkit-pricing-table>`,
    '',
    `<offerkit-usage-meter ${conn}`,
    `  account="YOUR_CUSTOMER_ID"></offerkit-usage-meter>`,
  ].join('\n');
}

/** The SDK on the customer's server: the secret key from the environment, never in the code. */
export function sdkSnippet(origin: string, appId: string) {
  return [
    "import { SecretClient } from '@offerkit/sdk';",
    '',
    'const offerkit = new SecretClient({',
    '  secretKey: process.env.OFFERKIT_SECRET_KEY!,',
    `  appId: '${appId}',`,
    `  baseUrl: '${origin}',`,
    '});',
    '',
    'const plans = await offerkit.plans.list();',
    "console.log('Plans:', plans.map((p) => p.id).join(', ') || 'none yet');",
  ].join('\n');
}

function Snippet({ code, label }: { code: string; label: string }) {
  return (
    <Stack gap={4}>
      <Code
        block
        aria-label={label}
        style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all', fontSize: 12 }}
        data-testid={label}
      >
        {code}
      </Code>
      <CopyButton value={code}>
        {({ copied, copy }) => (
          <Button size="xs" variant="default" w="fit-content" onClick={copy}>
            {copied ? 'Copied' : `Copy ${label.replace(/^[A-Z][a-z]/, (w) => w.toLowerCase())}`}
          </Button>
        )}
      </CopyButton>
    </Stack>
  );
}

interface Step {
  key: string;
  title: string;
  done: boolean | null;
  detail: string;
  /** Named apart from the navigation's links (tests and screen readers find "Offers" once). */
  link: { label: string; to: string; external?: boolean };
}

export function GettingStarted({ appId }: { appId: string }) {
  const { data, error, reload } = useLoad(() => loadState(appId), [appId]);
  const origin = window.location.origin;
  const base = `/apps/${encodeURIComponent(appId)}`;
  const steps: Step[] = data
    ? [
        {
          key: 'catalog',
          title: 'Build the catalog',
          done: data.state.plans === null ? null : data.state.plans > 0,
          detail: data.state.plans
            ? `${data.state.plans} plan${data.state.plans === 1 ? '' : 's'}`
            : 'Plans with their prices and the entitlements they include.',
          link: { label: 'Add plans', to: `${base}/catalog` },
        },
        {
          key: 'payments',
          title: 'Connect payments',
          done: data.state.paymentsConnected,
          detail: data.state.paymentsConnected
            ? 'The payment provider is connected.'
            : 'Connect PayPal (sandbox or live) so checkouts can take money.',
          link: { label: 'Connect', to: `${base}/payments` },
        },
        {
          key: 'offer',
          title: 'Publish an offer',
          done: data.state.offerPublished === null ? null : !!data.state.offerPublished,
          detail: data.state.offerPublished
            ? `Offer ${data.state.offerPublished} is published.`
            : 'The prices and extras buyers see in the pricing table.',
          link: { label: 'Create one', to: `${base}/offers` },
        },
        {
          key: 'components',
          title: 'Embed the components',
          done: !!data.state.componentsUsedAt,
          detail: data.state.componentsUsedAt
            ? `First request from a web page with the publishable key on ${new Date(
                data.state.componentsUsedAt,
              ).toLocaleString()}.`
            : 'Paste the snippet below into a page of your site; this step is done when a browser first loads it ' +
              '(a call from a server does not count).',
          link: { label: 'See the snippets', to: '#getting-started-snippets', external: true },
        },
        {
          key: 'event',
          title: 'Receive the first event',
          done: data.state.firstEvent,
          detail: data.state.firstEvent
            ? 'Usage or a completed checkout has arrived.'
            : 'Record usage from your product, or let a buyer complete a checkout.',
          link: { label: 'See usage', to: `${base}/analytics` },
        },
      ]
    : [];
  const left = steps.filter((s) => !s.done).length;
  return (
    <Card withBorder aria-label="Getting started">
      <Stack gap="sm">
        <Group justify="space-between" wrap="wrap" gap="xs">
          <Title order={3} size="h4">
            Getting started
          </Title>
          <Group gap="xs">
            {data && (
              <Badge variant="light" color={left ? 'indigo' : 'teal'}>
                {left ? `${steps.length - left} of ${steps.length} done` : 'All done'}
              </Badge>
            )}
            <Button size="compact-xs" variant="subtle" onClick={() => void reload()}>
              Check again
            </Button>
          </Group>
        </Group>
        <Loading error={error}>
          {data && (
            <Stack gap="sm">
              <Stack gap={6} component="ol" style={{ listStyle: 'none', padding: 0, margin: 0 }}>
                {steps.map((s, i) => (
                  <Group
                    key={s.key}
                    component="li"
                    wrap="nowrap"
                    align="flex-start"
                    gap="sm"
                    aria-label={`${s.title}: ${s.done ? 'done' : s.done === null ? 'unknown' : 'to do'}`}
                  >
                    <ThemeIcon
                      radius="xl"
                      size="md"
                      color={s.done ? 'teal' : 'gray'}
                      variant={s.done ? 'filled' : 'light'}
                      aria-hidden
                    >
                      {s.done ? '✓' : i + 1}
                    </ThemeIcon>
                    <Stack gap={0} style={{ minWidth: 0 }}>
                      <Group gap="xs">
                        <Text fw={600} size="sm">
                          {s.title}
                        </Text>
                        {s.link.external ? (
                          <Anchor size="sm" href={s.link.to}>
                            {s.link.label}
                          </Anchor>
                        ) : (
                          <Anchor size="sm" component={Link} to={s.link.to}>
                            {s.link.label}
                          </Anchor>
                        )}
                      </Group>
                      <Text size="xs" c="dimmed">
                        {s.done === null ? 'Could not be checked with your role.' : s.detail}
                      </Text>
                    </Stack>
                  </Group>
                ))}
              </Stack>
              <Tabs defaultValue="components" id="getting-started-snippets">
                <Tabs.List>
                  <Tabs.Tab value="components">Components</Tabs.Tab>
                  <Tabs.Tab value="sdk">SDK</Tabs.Tab>
                </Tabs.List>
                <Tabs.Panel value="components" pt="xs">
                  <Stack gap={4}>
                    <Text size="xs" c="dimmed">
                      In any page of your site: the pricing table and the usage meter of one customer (replace
                      YOUR_CUSTOMER_ID with your user or team id). The publishable key is safe in a browser.
                    </Text>
                    <Snippet
                      label="Components snippet"
                      code={componentsSnippet(
                        origin,
                        data.app.id,
                        data.app.public_key,
                        data.state.offerPublished || null,
                      )}
                    />
                  </Stack>
                </Tabs.Panel>
                <Tabs.Panel value="sdk" pt="xs">
                  <Stack gap={4}>
                    <Text size="xs" c="dimmed">
                      On your server, with the secret key in the OFFERKIT_SECRET_KEY environment variable (reveal it
                      above); never ship it to a browser. The SDK is not on the npm registry yet: install it from your
                      offerkit checkout, where npm start built it:{' '}
                      <Code>npm install /path/to/offerkit/packages/sdk</Code> (or the tarball <Code>npm pack</Code>{' '}
                      makes in packages/sdk).
                    </Text>
                    <Snippet label="SDK snippet" code={sdkSnippet(origin, data.app.id)} />
                  </Stack>
                </Tabs.Panel>
              </Tabs>
            </Stack>
          )}
        </Loading>
      </Stack>
    </Card>
  );
}
