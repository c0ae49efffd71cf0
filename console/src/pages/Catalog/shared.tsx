// What the catalog's sections share: the loaded catalog, and small helpers for forms and lists.
import { Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useId, type ReactNode } from 'react';
import { plural } from '../../plural';
import type { Addon, AppApi, Entitlement, Incentive, Plan } from '../../api';

export type Offer = Awaited<ReturnType<AppApi['offers']['list']>>[number];

export interface Catalog {
  plans: Plan[];
  entitlements: Entitlement[];
  addons: Addon[];
  incentives: Incentive[];
  offers: Offer[];
  /** Accounts on each plan and with each incentive (null: could not be counted; absent: not loaded). */
  accounts?: { plans: Record<string, number | null>; incentives: Record<string, number | null> };
}

export type Kind = 'plans' | 'entitlements' | 'addons' | 'incentives';

/**
 * Why the API would refuse to delete a record, from what the page already loaded, or null: the same rules as the
 * service's deletes (src/catalog/catalog.service.ts). What the page cannot see (open checkouts, paused subscriptions
 * that come back to a plan, accounts owning an add-on) still comes back as the API's 409 in the dialog.
 */
export function deleteRefusal(kind: Kind, id: string, c: Catalog): string | null {
  const live = c.offers.filter((o) => o.status === 'active');
  const list = (things: string[]) => things.join(', ');
  const reasons: string[] = [];
  if (kind === 'plans') {
    const accounts = c.accounts?.plans[id];
    if (accounts) reasons.push(`${plural(accounts, 'account')} on it`);
    const selling = live.filter((o) => o.plans.some((p) => p.plan === id)).map((o) => o.name);
    if (selling.length) reasons.push(`live offer ${list(selling)} selling it`);
  }
  if (kind === 'entitlements' || kind === 'addons') {
    const onPlans = c.plans
      .filter((p) => (kind === 'addons' ? p.addons.includes(id) : p.entitlements.some((e) => e.id === id)))
      .map((p) => p.name);
    const onIncentives = c.incentives
      .filter((i) => (kind === 'addons' ? i.addons.includes(id) : i.entitlements.some((e) => e.id === id)))
      .map((i) => i.name);
    if (onPlans.length) reasons.push(`on plan ${list(onPlans)}`);
    if (onIncentives.length) reasons.push(`on incentive ${list(onIncentives)}`);
    // A credits pool: the features drawing from it (the API's 409 names them too).
    const drawing = c.entitlements
      .filter((e) => e.credits && 'pool' in e.credits && e.credits.pool === id)
      .map((e) => e.name);
    if (kind === 'entitlements' && drawing.length) reasons.push(`drawn from by ${list(drawing)}`);
  }
  if (kind === 'addons') {
    const bumping = live.filter((o) => o.bumps.some((b) => b.addon === id)).map((o) => o.name);
    if (bumping.length) reasons.push(`sold as an order bump by live offer ${list(bumping)}`);
  }
  if (kind === 'incentives') {
    const accounts = c.accounts?.incentives[id];
    if (accounts) reasons.push(`applied to ${plural(accounts, 'account')}`);
  }
  return reasons.length ? `Cannot delete: ${reasons.join('; ')}.` : null;
}

export interface SectionProps {
  api: AppApi;
  catalog: Catalog;
  reload: () => Promise<void>;
  /** False for a viewer: the records are shown without their forms and buttons. */
  canEdit: boolean;
}

/** Inputs that a viewer sees disabled (a native fieldset disables every control inside it). */
export function EditableArea({ canEdit, children }: { canEdit: boolean; children: ReactNode }) {
  return (
    <fieldset disabled={!canEdit} style={{ border: 0, padding: 0, margin: 0, minWidth: 0 }}>
      {children}
    </fieldset>
  );
}

/** A text input's value as the API takes it: empty is null (clears the field). */
export const orNull = (s: string): string | null => (s.trim() === '' ? null : s);

/** A number input's value (Mantine gives '' when empty) as a number, or undefined when empty. */
export const numOrUndefined = (v: string | number): number | undefined =>
  v === '' || v === undefined ? undefined : Number(v);

/** A comma-separated list of names, e.g. "Free, Pro", or `none`. */
export const names = (list: string[]) => (list.length ? list.join(', ') : 'none');

/** The display name of a record in `list`, or its id when it is not there. */
export const nameOf = (list: { id: string; name: string }[], id: string) => list.find((x) => x.id === id)?.name ?? id;

/** Offers whose plans or order bumps use a record: what a delete leaves dangling. */
export function offersUsing(offers: Offer[], use: (o: Offer) => boolean): string[] {
  return offers.filter(use).map((o) => o.name);
}

/** A form in a dialog: the record's editor. */
export function EditDialog({
  opened,
  title,
  onClose,
  children,
}: {
  opened: boolean;
  title: string;
  onClose: () => void;
  children: ReactNode;
}) {
  return (
    <Modal opened={opened} onClose={onClose} title={title} size="lg">
      {children}
    </Modal>
  );
}

/**
 * Edit and Delete buttons for one record, named after it for screen readers and tests. When the page already knows
 * the API would refuse the delete (`blocked`), Delete is disabled with the reason beside it.
 */
export function RowActions({
  label,
  kind,
  onEdit,
  onDelete,
  blocked,
}: {
  label: string;
  kind: Kind;
  onEdit: () => void;
  onDelete: () => void;
  blocked?: string | null;
}) {
  const reasonId = useId();
  return (
    <Stack gap={2} align="flex-end">
      <Group gap={4} wrap="nowrap">
        <Button
          size="compact-sm"
          variant="light"
          aria-label={`Edit ${label}`}
          data-route={`${kind}.update`}
          onClick={onEdit}
        >
          Edit
        </Button>
        <Button
          size="compact-sm"
          variant="subtle"
          color="red"
          aria-label={`Delete ${label}`}
          data-route={`${kind}.delete`}
          disabled={!!blocked}
          aria-describedby={blocked ? reasonId : undefined}
          onClick={onDelete}
        >
          Delete
        </Button>
      </Group>
      {blocked && (
        <Text size="xs" c="dimmed" ta="right" maw={220} id={reasonId}>
          {blocked}
        </Text>
      )}
    </Stack>
  );
}

export function Hint({ children }: { children: ReactNode }) {
  return (
    <Text size="xs" c="dimmed">
      {children}
    </Text>
  );
}
