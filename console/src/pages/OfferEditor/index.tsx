// The offer editor: name and description, the plans it sells (prices per interval and currency, extras), order
// bumps, schedule and fallback, with a live preview of what a buyer sees (draft-preview validates the unsaved
// fields like a create and stores nothing, so its errors are the API's own words), save, publish and archive.
//
// In parts: form.ts maps a stored offer to the form and back to the API's body (a plain module with unit tests; the
// checks are the API's own, through draft-preview), and each section of the editor is a component in its own file.
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Fieldset,
  Group,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Textarea,
  Title,
} from '@mantine/core';
import type { OffersCreateBody, OffersPreviewDraftResponse } from '@offerkit/sdk';
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import type { AppApi } from '../../api';
import { ErrorText, splitFieldError, useAction } from '../../ui';
import { BumpsSection } from './BumpsSection';
import {
  bodyOf,
  errorInWords,
  formOf,
  isDirty,
  offerCurrency,
  previewBody,
  type Offer,
  type OfferCatalog,
  type OfferForm,
  type PlanForm,
} from './form';
import { PlansSection } from './PlansSection';
import { PRICE_FIELDS } from './PlanCard';
import { Preview } from './Preview';
import { ScheduleSection } from './ScheduleSection';

export type { OfferCatalog } from './form';

export const STATUS_COLORS: Record<string, string> = {
  draft: 'gray',
  scheduled: 'blue',
  active: 'teal',
  expired: 'orange',
  archived: 'dark',
};

export function OfferEditor({
  api,
  offer,
  catalog,
  onSaved,
  readOnly = false,
  can = () => true,
}: {
  api: AppApi;
  offer: Offer;
  catalog: OfferCatalog;
  onSaved: () => Promise<void>;
  /**
   * The demo workspace, or a role that may not change offers (a viewer): edits still show in the preview, and nothing
   * offers to save them (the API would 403).
   */
  readOnly?: false | 'demo' | 'role';
  /** Whether the person may use an action (its SDK name): the route table's roles (session.tsx). */
  can?: (action: string) => boolean;
}) {
  const [form, setForm] = useState<OfferForm>(() => formOf(offer));
  const [preview, setPreview] = useState<OffersPreviewDraftResponse | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  // A 400 naming a price (`plans.1.prices.0.amount: is required`) lands under that price's input.
  const priceFields = form.plans.flatMap((p, i) =>
    p.prices.flatMap((_, k) => PRICE_FIELDS.map((f) => `plans.${i}.prices.${k}.${f}`)),
  );
  const action = useAction(['name', 'description', ...priceFields]);
  // The live preview's refusal names a field too (`plans.0.prices.0.amount: is required`): shown under that input,
  // like a save's, and in words in the preview.
  const previewField = previewError ? splitFieldError(previewError) : null;
  const fieldError = (name: string) =>
    action.field(name) ??
    (previewField && (previewField.field === name || previewField.field.startsWith(`${name}.`))
      ? previewField.problem
      : undefined);
  const body = bodyOf(form, offer);
  const dirty = isDirty(form, offer);
  const archived = offer.status === 'archived';
  const currency = offerCurrency(form);
  const key = JSON.stringify(previewBody(form, offer));
  // The live preview: what a buyer would see with the unsaved fields, a moment after the last change.
  useEffect(() => {
    let current = true;
    const t = setTimeout(() => {
      api.offers.previewDraft(JSON.parse(key) as OffersCreateBody).then(
        (p) => current && (setPreview(p), setPreviewError(null)),
        (e: Error) => current && setPreviewError(e.message),
      );
    }, 300);
    return () => {
      current = false;
      clearTimeout(t);
    };
  }, [api, key]);

  const setPlan = (i: number, patch: Partial<PlanForm>) =>
    setForm((f) => ({ ...f, plans: f.plans.map((p, j) => (j === i ? { ...p, ...patch } : p)) }));
  const movePlan = (i: number, by: -1 | 1) =>
    setForm((f) => {
      const plans = [...f.plans];
      [plans[i], plans[i + by]] = [plans[i + by], plans[i]];
      return { ...f, plans };
    });
  const save = () => api.offers.update(offer.id, body);

  return (
    <SimpleGrid cols={{ base: 1, md: 2 }}>
      <Card withBorder>
        <Stack gap="sm">
          <Group justify="space-between" wrap="nowrap" align="flex-start">
            <Title order={3} size="h4" style={{ overflowWrap: 'anywhere' }}>
              {offer.name}
            </Title>
            <Group gap={6} wrap="nowrap">
              {dirty && (
                <Badge color="yellow" variant="light">
                  unsaved
                </Badge>
              )}
              <Badge color={STATUS_COLORS[offer.live_status]} aria-label="Offer status">
                {offer.live_status}
              </Badge>
            </Group>
          </Group>
          {offer.status === 'active' && (
            <Text size="sm" c="dimmed">
              Live: saved changes apply to future purchases only; buyers keep the price and extras they bought.
            </Text>
          )}
          {archived && (
            <Alert color="gray" title="Archived">
              This offer sells no more and cannot be published again; buyers keep their terms. Create a new offer to
              sell again.
            </Alert>
          )}
          <Fieldset variant="unstyled" disabled={archived} p={0} m={0} miw={0}>
            <Stack gap="sm">
              <TextInput
                label="Name"
                error={fieldError('name')}
                value={form.name}
                onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
              />
              <Textarea
                label="Description"
                error={fieldError('description')}
                autosize
                minRows={2}
                value={form.description}
                onChange={(e) => setForm({ ...form, description: e.currentTarget.value })}
              />
              <PlansSection
                form={form}
                catalog={catalog}
                currency={currency}
                setPlan={setPlan}
                movePlan={movePlan}
                setForm={setForm}
                fieldError={fieldError}
              />
              <BumpsSection form={form} catalog={catalog} currency={currency} setForm={setForm} />
              <ScheduleSection form={form} catalog={catalog} offerId={offer.id} setForm={setForm} />
            </Stack>
          </Fieldset>
          <ErrorText error={action.error}>
            {/payment provider not connected/.test(action.error ?? '') && <ConnectPaymentsLink />}
          </ErrorText>
          {readOnly && (
            <Group gap="xs">
              <Text size="sm" c="dimmed" role="status">
                {readOnly === 'demo'
                  ? 'The demo workspace is read-only: edits show in the preview and are not saved.'
                  : 'Viewers try changes in the preview; members, admins and owners save them.'}
              </Text>
              {dirty && (
                <Button variant="default" onClick={() => setForm(formOf(offer))}>
                  Discard changes
                </Button>
              )}
            </Group>
          )}
          {!archived && !readOnly && (
            <Group gap="xs">
              <Button
                onClick={() => action.run(async () => (await save(), await onSaved()))}
                loading={action.busy}
                disabled={!dirty}
                data-route="offers.update"
              >
                Save
              </Button>
              {dirty && (
                <Button variant="default" onClick={() => setForm(formOf(offer))} disabled={action.busy}>
                  Discard changes
                </Button>
              )}
              {offer.status === 'draft' && can('offers.publish') && (
                <Button
                  color="teal"
                  disabled={action.busy}
                  data-route="offers.publish"
                  onClick={() =>
                    action.run(async () => {
                      // What is published is what the person sees: unsaved edits are saved first.
                      if (dirty) await save();
                      await api.offers.publish(offer.id);
                      await onSaved();
                    })
                  }
                >
                  {dirty ? 'Save and publish' : 'Publish'}
                </Button>
              )}
              {offer.status === 'active' && can('offers.archive') && (
                <Button
                  color="red"
                  variant="light"
                  disabled={action.busy}
                  data-route="offers.archive"
                  onClick={() => action.run(async () => (await api.offers.archive(offer.id), await onSaved()))}
                >
                  Archive
                </Button>
              )}
            </Group>
          )}
        </Stack>
      </Card>
      <Preview
        preview={preview}
        error={previewError && errorInWords(previewError, form, catalog)}
        marked={!!previewField && [...priceFields, 'name', 'description'].includes(previewField.field)}
        catalog={catalog}
      />
    </SimpleGrid>
  );
}

/** Where a 409 "payment provider not connected" is fixed: the app's Payments page. */
function ConnectPaymentsLink() {
  const { appId } = useParams();
  return (
    <Anchor component={Link} to={`/apps/${appId}/payments`} size="sm">
      Connect PayPal on the Payments page
    </Anchor>
  );
}
