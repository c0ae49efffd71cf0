// Small shared pieces: loading data with its error, and showing an API error as the API words it.
import { Alert, Button, Center, Group, Loader, Modal, Stack, Text } from '@mantine/core';
import { useCallback, useEffect, useState, type ReactNode } from 'react';

export function useLoad<T>(load: () => PromiseLike<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(load, deps);
  const reload = useCallback(async () => {
    try {
      setData(await run());
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [run]);
  useEffect(() => {
    setData(undefined);
    void reload();
  }, [reload]);
  return { data, error, reload, setData };
}

export function ErrorText({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return (
    <Alert color="red" role="alert" title="The API said">
      {error}
    </Alert>
  );
}

export function Loading({ error, children }: { error: string | null; children: ReactNode | undefined }) {
  if (error) return <ErrorText error={error} />;
  if (children === undefined)
    return (
      <Center p="xl">
        <Loader aria-label="Loading" />
      </Center>
    );
  return <>{children}</>;
}

/** Runs an action, keeping its error for display. */
export function useAction() {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError((e as Error).message);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, setError };
}

/**
 * Asks before something that cannot be undone: what the API will do, then the action; the API's refusal stays
 * in the dialog as worded, and the dialog closes only when the action went through.
 */
export function ConfirmDialog({
  opened,
  title,
  confirmLabel,
  onConfirm,
  onClose,
  children,
}: {
  opened: boolean;
  title: string;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
  children: ReactNode;
}) {
  const action = useAction();
  const close = () => {
    action.setError(null);
    onClose();
  };
  return (
    <Modal opened={opened} onClose={close} title={title}>
      <Stack>
        {children}
        <ErrorText error={action.error} />
        <Group justify="flex-end" gap="xs">
          <Button variant="default" onClick={close} disabled={action.busy}>
            Keep it
          </Button>
          <Button
            color="red"
            loading={action.busy}
            onClick={async () => {
              if (await action.run(onConfirm)) onClose();
            }}
          >
            {confirmLabel}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/**
 * Newer / Older over cursor pages. `cursors` are the cursors of the pages walked so far (the last is the page
 * shown; undefined is the first page); `next` is the shown page's `next_cursor`. Hidden on a single page.
 */
export function CursorPager({
  cursors,
  setCursors,
  next,
}: {
  cursors: (string | undefined)[];
  setCursors: (cursors: (string | undefined)[]) => void;
  next: string | null | undefined;
}) {
  if (cursors.length === 1 && !next) return null;
  return (
    <Group gap="xs" justify="flex-end">
      <Text size="sm" c="dimmed">
        Page {cursors.length}
      </Text>
      <Button
        size="xs"
        variant="default"
        disabled={cursors.length === 1}
        onClick={() => setCursors(cursors.slice(0, -1))}
      >
        Newer
      </Button>
      <Button size="xs" variant="default" disabled={!next} onClick={() => next && setCursors([...cursors, next])}>
        Older
      </Button>
    </Group>
  );
}
