// What the catalog's sections share: the loaded catalog, and small helpers for forms and lists.
import { Button, Group, Modal, Text } from '@mantine/core';
import { type ReactNode } from 'react';
import type { Addon, AppApi, Entitlement, Incentive, Plan } from '../../api';

export type Offer = Awaited<ReturnType<AppApi['offers']['list']>>[number];

export interface Catalog {
  plans: Plan[];
  entitlements: Entitlement[];
  addons: Addon[];
  incentives: Incentive[];
  offers: Offer[];
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

/** Edit and Delete buttons for one record, named after it for screen readers and tests. */
export function RowActions({ label, onEdit, onDelete }: { label: string; onEdit: () => void; onDelete: () => void }) {
  return (
    <Group gap={4} wrap="nowrap">
      <Button size="compact-sm" variant="light" aria-label={`Edit ${label}`} onClick={onEdit}>
        Edit
      </Button>
      <Button size="compact-sm" variant="subtle" color="red" aria-label={`Delete ${label}`} onClick={onDelete}>
        Delete
      </Button>
    </Group>
  );
}

export function Hint({ children }: { children: ReactNode }) {
  return (
    <Text size="xs" c="dimmed">
      {children}
    </Text>
  );
}
