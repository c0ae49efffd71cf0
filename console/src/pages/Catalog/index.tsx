// The catalog page: the limits grid, then one section per kind of record (plans, entitlements, add-ons,
// incentives, credit packs), each listing its records with Edit and Delete and a form for a new one.
import { Alert, Anchor, Group, Stack, Title } from '@mantine/core';
import { useEffect } from 'react';
import { useLocation, useParams } from 'react-router';
import { appApi } from '../../api';
import { useCan, useDemo } from '../../session';
import { Loading, useLoad } from '../../ui';
import { Addons } from './Addons';
import { Entitlements } from './Entitlements';
import { Grid } from './Grid';
import { Incentives } from './Incentives';
import { Packs, type Pack } from './Packs';
import { Plans } from './Plans';
import type { Catalog } from './shared';

export function CatalogPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(async (): Promise<Catalog & { packs: Pack[] }> => {
    const [plans, entitlements, addons, incentives, offers, packs] = await Promise.all([
      api.plans.list(),
      api.entitlements.list(),
      api.addons.list(),
      api.incentives.list(),
      api.offers.list(),
      api.creditPacks.list(),
    ]);
    // How many accounts hold each plan and incentive: the API refuses to delete one while any does, and the page
    // says so before the click (a count that cannot be read leaves the button to the API's answer).
    const count = (p: PromiseLike<{ total: number }>) =>
      Promise.resolve(p).then(
        (r) => r.total,
        () => null,
      );
    const [planAccounts, incentiveAccounts] = await Promise.all([
      Promise.all(plans.map((p) => count(api.plans.listAccounts(p.id, { per_page: 1 })))),
      Promise.all(incentives.map((i) => count(api.accounts.listWithIncentive({ incentive: i.id, per_page: 1 })))),
    ]);
    return {
      plans,
      entitlements,
      addons,
      incentives,
      offers,
      packs,
      accounts: {
        plans: Object.fromEntries(plans.map((p, i) => [p.id, planAccounts[i]])),
        incentives: Object.fromEntries(incentives.map((x, i) => [x.id, incentiveAccounts[i]])),
      },
    };
  }, [appId]);
  // Viewers read the catalog; members and above change it (the route table's roles). The read-only demo workspace
  // shows its records and no form, since the server would refuse every change.
  const demo = useDemo(appId);
  const can = useCan(appId);
  const canEdit = can('plans.update');
  const props = data && { api, catalog: data, reload, canEdit };
  // A link to a section (`catalog#addons`, from the offer editor) lands on it once the catalog is shown.
  const { hash } = useLocation();
  const loaded = !!data;
  useEffect(() => {
    if (loaded && hash) document.getElementById(hash.slice(1))?.scrollIntoView();
  }, [loaded, hash]);
  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <Title order={2}>Catalog</Title>
        <Group gap="sm" component="nav" aria-label="Catalog sections">
          <Anchor href="#plans">Plans</Anchor>
          <Anchor href="#entitlements">Entitlements</Anchor>
          <Anchor href="#addons">Add-ons</Anchor>
          <Anchor href="#incentives">Incentives</Anchor>
          <Anchor href="#packs">Credit packs</Anchor>
        </Group>
      </Group>
      {!canEdit && (
        <Alert color="gray" title="View only">
          {demo
            ? 'The demo workspace is read-only: its catalog can be read, not changed.'
            : 'You are a viewer in this workspace: a member, admin or owner changes the catalog.'}
        </Alert>
      )}
      <Loading error={error}>
        {props && (
          <>
            <Grid {...props} />
            <Plans {...props} />
            <Entitlements {...props} />
            <Addons {...props} />
            <Incentives {...props} />
            <Packs {...props} packs={data.packs} can={can} />
          </>
        )}
      </Loading>
    </Stack>
  );
}
