// Small shared pieces: loading data with its error, showing an API error as the API words it, a value to copy.
import { Alert, Button, Center, Code, CopyButton, Group, Loader, Modal, Stack, Text } from '@mantine/core';
import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from 'react';

/** Loads data, again when `deps` change; only the latest load's answer is kept (an earlier, slower one is dropped). */
export function useLoad<T>(load: () => PromiseLike<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const latest = useRef(0);
  const run = useCallback(load, deps);
  const reload = useCallback(async () => {
    const mine = ++latest.current;
    try {
      const value = await run();
      if (mine !== latest.current) return;
      setData(value);
      setError(null);
    } catch (e) {
      if (mine === latest.current) setError((e as Error).message);
    }
  }, [run]);
  useEffect(() => {
    setData(undefined);
    void reload();
  }, [reload]);
  return { data, error, reload, setData };
}

/** An API error as worded; `children` (a link to where it is fixed) follow the words. */
/** An error in words; `title` says what did not happen (a save by default). */
export function ErrorText({
  error,
  children,
  title = 'Not saved',
}: {
  error: string | null | undefined;
  children?: ReactNode;
  title?: string;
}) {
  if (!error) return null;
  return (
    <Alert color="red" role="alert" title={title}>
      {error}
      {children && <div>{children}</div>}
    </Alert>
  );
}

export function Loading({ error, children }: { error: string | null; children: ReactNode | undefined }) {
  if (error) return <ErrorText error={error} title="Could not load" />;
  if (children === undefined)
    return (
      <Center p="xl">
        <Loader aria-label="Loading" />
      </Center>
    );
  return <>{children}</>;
}

/**
 * The field a validation 400 names: the API words every one as `<field>: <problem>` (`plans.1.prices.0.amount:
 * is required`), so the console can put the problem under the input it concerns. Null for any other error.
 */
export function splitFieldError(message: string): { field: string; problem: string } | null {
  const m = /^([A-Za-z_][\w]*(?:\.[\w]+)*): (.+)$/s.exec(message);
  return m ? { field: m[1], problem: m[2] } : null;
}

/**
 * Runs an action, keeping its error for display. A form passes the field paths it has inputs for (`fields`);
 * `field(name)` is then the problem for one input (pass it as the input's `error`), matched on the path the API
 * names or any path under it (`prices` matches `prices.0.amount`), and `error` is only what no input shows (for
 * `<ErrorText>`). The form's values are the caller's state, so nothing typed is lost on an error.
 */
export function useAction(fields: readonly string[] = []) {
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
  const split = error ? splitFieldError(error) : null;
  const under = (name: string) => !!split && (split.field === name || split.field.startsWith(`${name}.`));
  /** The problem for the input bound to `name` (the API's field path, dotted), or undefined. */
  const field = (name: string): string | undefined => (under(name) ? split!.problem : undefined);
  /** The error no input shows (for `<ErrorText>`). */
  const unclaimed = split && fields.some(under) ? null : error;
  return { error: unclaimed, rawError: error, busy, run, setError, field };
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
  blocked,
  route,
}: {
  opened: boolean;
  title: string;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
  children: ReactNode;
  /** Why the page already knows the API would refuse: the confirm button is disabled and this is shown by it. */
  blocked?: string | null;
  /** The action the confirm button calls (its SDK name), for the role walk's check (`data-route`). */
  route?: string;
}) {
  const action = useAction();
  const reasonId = useId();
  const close = () => {
    action.setError(null);
    onClose();
  };
  return (
    <Modal opened={opened} onClose={close} title={title}>
      <Stack>
        {children}
        <ErrorText error={action.error} />
        {blocked && (
          <Text size="sm" c="red" id={reasonId}>
            {blocked}
          </Text>
        )}
        <Group justify="flex-end" gap="xs">
          <Button variant="default" onClick={close} disabled={action.busy}>
            Keep it
          </Button>
          <Button
            color="red"
            loading={action.busy}
            disabled={!!blocked}
            aria-describedby={blocked ? reasonId : undefined}
            data-route={route}
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

/**
 * A value to copy (a URL PayPal calls, a signing secret, an invitation link): shown whole in monospace, wrapping
 * anywhere, named `label` (for screen readers and tests), with a Copy button beside it that says Copied for a moment.
 */
export function CopyField({ value, label }: { value: string; label: string }) {
  return (
    <Group gap="xs" wrap="nowrap" align="flex-start">
      <Code style={{ wordBreak: 'break-all', flex: 1 }} aria-label={label}>
        {value}
      </Code>
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Button size="xs" variant="default" style={{ flexShrink: 0 }} onClick={copy}>
            {copied ? 'Copied' : 'Copy'}
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}
