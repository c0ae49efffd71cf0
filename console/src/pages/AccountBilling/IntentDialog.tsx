// One billing intent in a dialog: what it does, then the action; a refusal stays in the dialog in words, with a button
// for each step the API names to resolve it ("Withdraw it", "Replace it"); an answer the person must act on (a link
// for the customer to approve at the provider) replaces the text until they close it. Either way the page reloads the
// subscription and the timeline: a refusal is a line of the timeline too, and a refused intent means the state moved.
import { Alert, Anchor, Button, Group, Modal, Stack, Text } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { CopyField } from '../../ui';
import { dayTime } from '../Billing/text';
import { refusedOf, STEP_LABELS, type Refused, type Step } from './words';

/** The SDK method each step calls, for the role walk's check (`data-route`). */
export const STEP_ROUTES: Record<Step, string> = {
  withdraw: 'subscriptions.withdrawChange',
  replace: 'subscriptions.change',
  resume: 'subscriptions.resume',
  undo_cancel: 'subscriptions.resume',
  retry: 'subscriptions.retryPayment',
  cancel: 'subscriptions.cancel',
};

export function RefusalAlert({ refused, onStep }: { refused: Refused; onStep: (step: Step) => void }) {
  return (
    <Alert color="red" role="alert" title={refused.status === 409 ? 'Refused' : 'Not done'}>
      <Stack gap="xs">
        <Text size="sm">{refused.words}</Text>
        {refused.steps.length > 0 && (
          <Group gap="xs">
            {refused.steps.map((s) => (
              <Button
                key={s}
                size="xs"
                variant="white"
                color="red"
                data-route={STEP_ROUTES[s]}
                onClick={() => onStep(s)}
              >
                {STEP_LABELS[s]}
              </Button>
            ))}
          </Group>
        )}
      </Stack>
    </Alert>
  );
}

/** Where the customer approves a change at the provider: the operator is not the buyer, so a link to send them. */
export function ApproveLink({ url, until, what }: { url: string; until?: string | null; what: string }) {
  return (
    <Stack gap="xs">
      <Text size="sm">
        Send the customer to this link: they approve {what} at the payment provider
        {until ? ` (until ${dayTime(until)})` : ''}. Nothing changes until they do.
      </Text>
      <CopyField value={url} label="Approval link" />
      <Anchor size="sm" href={url} target="_blank" rel="noreferrer">
        Open the approval page
      </Anchor>
    </Stack>
  );
}

export function IntentDialog({
  opened,
  title,
  confirmLabel,
  route,
  onConfirm,
  onClose,
  onChanged,
  onStep,
  children,
  blocked,
  refusal,
  color = 'indigo',
  closeLabel = 'Close',
}: {
  opened: boolean;
  title: string;
  confirmLabel: string;
  /** The SDK method the confirm button calls (`data-route`). */
  route: string;
  /** The intent; what it answers that the person must see next (an approval link), or nothing to close at once. */
  onConfirm: () => Promise<ReactNode | void>;
  onClose: () => void;
  /** Reload the subscription and the timeline. */
  onChanged: () => void;
  onStep: (step: Step) => void;
  children: ReactNode;
  /** Not ready to confirm (a quote still loading, or refused). */
  blocked?: boolean;
  /** A refusal found before confirming (the quote's 409). */
  refusal?: Refused | null;
  color?: string;
  closeLabel?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<Refused | null>(null);
  const [result, setResult] = useState<ReactNode | null>(null);
  const close = () => {
    setRefused(null);
    setResult(null);
    onClose();
  };
  const confirm = async () => {
    setBusy(true);
    setRefused(null);
    try {
      const answer = await onConfirm();
      if (answer) setResult(answer);
      else close();
    } catch (e) {
      setRefused(refusedOf(e));
    } finally {
      setBusy(false);
      onChanged();
    }
  };
  const shown = refused ?? refusal ?? null;
  return (
    <Modal opened={opened} onClose={close} title={title}>
      {result ? (
        <Stack>
          {result}
          <Group justify="flex-end">
            <Button onClick={close}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <Stack>
          {children}
          {shown && (
            <RefusalAlert
              refused={shown}
              onStep={(s) => {
                setRefused(null);
                onStep(s);
              }}
            />
          )}
          <Group justify="flex-end" gap="xs">
            <Button variant="default" onClick={close} disabled={busy}>
              {closeLabel}
            </Button>
            {/* After a 409 the state has moved: the steps resolve it. A 503 may simply be tried again. */}
            <Button
              color={color}
              loading={busy}
              disabled={blocked || refused?.status === 409}
              data-route={route}
              onClick={confirm}
            >
              {confirmLabel}
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
