// The catalog page: the limits grid, then one section per kind of record (plans, entitlements, add-ons,
// incentives), each listing its records with Edit and Delete and a form for a new one.
import { Alert, Anchor, Group, Stack, Title } from '@mantine/core';
import { useEffect } from 'react';
import { useLocation, useParams } from 'react-router';
import { appApi } from '../../api';
import { useSession } from '../../session';
import { Loading, useLoad } from '../../ui';
import { Addons } from './Addons';
import { Entitlements } from './Entitlements';
import { Grid } from './Grid';
import { Incentives } from './Incentives';
import { Plans } from './Plans';
import type { Catalog } from './shared';

export function CatalogPage() {
  const { appId } = useParams();
  const api = appApi(appId!);
  const { data, error, reload } = useLoad(async (): Promise<Catalog> => {
    const [plans, entitlements, addons, incentives, offers] = await Promise.all([
      api.plans.list(),
      api.entitlements.list(),
      api.addons.list(),
      api.incentives.list(),
      api.offers.list(),
    ]);
    return { plans, entitlements, addons, incentives, offers };
  }, [appId]);
  // Viewers read the catalog; members and above change it. The demo workspace (everyone a viewer) keeps its forms
  // to show what the console does; its writes are refused with the API's words.
  const { me } = useSession();
  const workspace = me.workspaces.find((w) => w.apps.some((a) => a.id === appId));
  const canEdit = !workspace || workspace.demo || workspace.role !== 'viewer';
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
        </Group>
      </Group>
      {!canEdit && (
        <Alert color="gray" title="View only">
          You are a viewer in this workspace: a member, admin or owner changes the catalog.
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
          </>
        )}
      </Loading>
    </Stack>
  );
}
