// The billing intents' dialogs, each saying what the intent does in the subscription's state before it is asked:
// change plan (quoted first), withdraw a change, pause, resume or undo a cancellation, cancel, retry a payment.
import { Radio, SegmentedControl, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import type { Plan, Subscription } from '@offerkit/sdk';
import { useEffect, useRef, useState } from 'react';
import { appApi } from '../../api';
import { useLoad } from '../../ui';
import { changesOf, day } from '../Billing/text';
import { ApproveLink, IntentDialog } from './IntentDialog';
import { quoteRows, refusedOf, type Offered, type Quote, type Refused, type Step } from './words';

export interface DialogProps {
  appId: string;
  accountId: string;
  sub: Subscription;
  offered: Offered;
  opened: boolean;
  onClose: () => void;
  onChanged: () => void;
  onStep: (step: Step) => void;
}
type Interval = 'month' | 'year';

/** The intervals a plan is sold at (its pricing card's prices); a free plan has none to pick. */
function intervalsOf(p: Plan): Interval[] {
  if (p.isFree) return [];
  const c = p.pricingCard;
  return [
    ...(c?.monthlyPrice !== undefined ? (['month'] as const) : []),
    ...(c?.yearlyPrice !== undefined ? (['year'] as const) : []),
  ];
}

/**
 * Pick a plan and an interval; the quote (asked of nobody, changing nothing) says what is charged now, the new price
 * and from when, with the direction and the app's policy; Confirm asks for that change with the quote's
 * `proration_date` (so the provider is asked for exactly the quoted amount) and answers the link the customer approves
 * it at. `replace`: it replaces the change scheduled for the renewal.
 */
export function ChangePlanDialog(props: DialogProps & { replace: boolean }) {
  const { appId, accountId, sub, opened, replace } = props;
  const api = appApi(appId);
  const plans = useLoad(() => (opened ? api.plans.list() : Promise.resolve(undefined)), [appId, opened]);
  const [plan, setPlan] = useState<string | null>(null);
  const [interval, setInterval] = useState<Interval>(sub.interval);
  const [quote, setQuote] = useState<Quote | null>(null);
  const [refusal, setRefusal] = useState<Refused | null>(null);
  const latest = useRef(0);
  const picked = plans.data?.find((p) => p.id === plan);
  const intervals = picked ? intervalsOf(picked) : [];
  const at = intervals.includes(interval) ? interval : intervals[0];
  useEffect(() => {
    setQuote(null);
    setRefusal(null);
    if (!opened || !plan) return;
    const mine = ++latest.current;
    const body = { plan, ...(at ? { interval: at } : {}), ...(replace ? { replace: true } : {}) };
    api.subscriptions.quote(accountId, body).then(
      (q) => mine === latest.current && setQuote(q),
      (e) => {
        if (mine !== latest.current) return;
        setRefusal(refusedOf(e));
        // Refused: the subscription moved since the page read it (the customer, another tab).
        props.onChanged();
      },
    );
  }, [opened, plan, at, replace, accountId]);
  const choices = (plans.data ?? []).filter((p) => p.isFree || intervalsOf(p).length > 0);
  const label = (p: Plan) =>
    p.isFree
      ? `${p.name} (free)`
      : `${p.name}: ${intervalsOf(p)
          .map(
            (i) =>
              `${i === 'month' ? p.pricingCard!.monthlyPrice : p.pricingCard!.yearlyPrice} ${p.pricingCard!.currency ?? 'USD'} / ${i}`,
          )
          .join(', ')}`;
  return (
    <IntentDialog
      {...props}
      title={`Change the plan of ${accountId}`}
      confirmLabel="Confirm change"
      route="subscriptions.change"
      blocked={!quote}
      refusal={refusal}
      onClose={() => {
        setPlan(null);
        props.onClose();
      }}
      onConfirm={async () => {
        const res = await api.subscriptions.change(accountId, {
          plan: quote!.plan.id,
          ...(at ? { interval: at } : {}),
          ...(replace ? { replace: true } : {}),
          proration_date: quote!.proration_date,
        });
        if (res.approve_url)
          return (
            <ApproveLink
              url={res.approve_url}
              until={res.pending_change?.expires_at}
              what={`the change to ${quote!.plan.name}`}
            />
          );
        return (
          <Text size="sm">
            {res.cancel_at
              ? `The subscription is cancelled at the end of its period (${day(res.cancel_at)}); the account then ` +
                `moves to ${quote!.plan.name}.`
              : 'The change is asked for; nothing needs approving.'}
          </Text>
        );
      }}
    >
      <Text size="sm">
        Now on {sub.plan} / {sub.interval} at {sub.price} {sub.currency}.
        {replace &&
          sub.scheduled_change &&
          ` This replaces the change to ${sub.scheduled_change.plan} scheduled for the renewal once the customer approves it.`}
      </Text>
      <Select
        label="New plan"
        placeholder="Pick a plan"
        data={choices.map((p) => ({ value: p.id, label: label(p) }))}
        value={plan}
        onChange={setPlan}
        comboboxProps={{ withinPortal: true }}
      />
      {intervals.length > 1 && (
        <SegmentedControl
          aria-label="Billing interval"
          data={[
            { value: 'month', label: 'Monthly' },
            { value: 'year', label: 'Yearly' },
          ]}
          value={at}
          onChange={(v) => setInterval(v as Interval)}
        />
      )}
      {quote && (
        <Table aria-label="Quote" withRowBorders={false} verticalSpacing={4}>
          <Table.Tbody>
            {quoteRows(quote).map(([k, v]) => (
              <Table.Tr key={k}>
                <Table.Th w={110} fw={600} style={{ verticalAlign: 'top' }}>
                  {k}
                </Table.Th>
                <Table.Td>{v}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {plan && !quote && !refusal && (
        <Text size="sm" c="dimmed">
          Quoting…
        </Text>
      )}
    </IntentDialog>
  );
}

/** Withdraw a change: one waiting is dropped now; one scheduled needs the provider moved back (the customer approves). */
export function WithdrawDialog(props: DialogProps) {
  const { appId, accountId, sub } = props;
  const c = sub.pending_change?.status === 'awaiting_approval' ? sub.pending_change : sub.scheduled_change;
  return (
    <IntentDialog
      {...props}
      title={`Withdraw the change to ${c?.plan ?? 'another plan'}?`}
      confirmLabel="Withdraw the change"
      route="subscriptions.withdrawChange"
      color="orange"
      onConfirm={async () => {
        const res = await appApi(appId).subscriptions.withdrawChange(accountId, {});
        if (res.approve_url)
          return (
            <ApproveLink url={res.approve_url} until={res.pending_change?.expires_at} what={`staying on ${sub.plan}`} />
          );
      }}
    >
      {c?.status === 'scheduled' ? (
        <Text size="sm">
          The customer already approved the change to {c.plan} for the renewal ({day(sub.renews_at)}): the payment
          provider must be moved back to {sub.plan}. You get a link for the customer to approve that; the change stands
          until they do.
        </Text>
      ) : (
        <Text size="sm">
          The change to {c?.plan} waiting for the customer&apos;s approval is dropped now; {sub.plan} stays.
        </Text>
      )}
    </IntentDialog>
  );
}

export function PauseDialog(props: DialogProps) {
  const { appId, accountId, sub } = props;
  const [months, setMonths] = useState<string>('1');
  const [reason, setReason] = useState('');
  return (
    <IntentDialog
      {...props}
      title={`Pause the subscription of ${accountId}`}
      confirmLabel="Pause"
      route="subscriptions.pause"
      onConfirm={() =>
        appApi(appId)
          .subscriptions.pause(accountId, {
            months: Number(months),
            ...(reason.trim() ? { reason: reason.trim() } : {}),
          })
          .then(() => undefined)
      }
    >
      <Text size="sm">
        Billing stops at the payment provider now and the account moves to the free plan. The account&apos;s actor
        resumes it on its own at the end of the pause (on the app&apos;s clock), or earlier with Resume.
        {sub.scheduled_change &&
          ` The change to ${sub.scheduled_change.plan} scheduled for the renewal stays and applies at the first renewal after the pause.`}
      </Text>
      <Select
        label="Months"
        data={Array.from({ length: 12 }, (_, i) => ({ value: String(i + 1), label: `${i + 1} month${i ? 's' : ''}` }))}
        value={months}
        onChange={(v) => v && setMonths(v)}
        allowDeselect={false}
        comboboxProps={{ withinPortal: true }}
      />
      <TextInput
        label="Reason"
        description="Optional; kept with the pause"
        value={reason}
        maxLength={500}
        onChange={(e) => setReason(e.currentTarget.value)}
      />
    </IntentDialog>
  );
}

/** End a pause now, or undo a cancellation at the period end (the same intent: resume). */
export function ResumeDialog(props: DialogProps) {
  const { appId, accountId, sub, offered } = props;
  return (
    <IntentDialog
      {...props}
      title={offered.undoesCancel ? 'Undo the cancellation?' : `Resume the subscription of ${accountId}?`}
      confirmLabel={offered.undoesCancel ? 'Undo the cancellation' : 'Resume now'}
      route="subscriptions.resume"
      onConfirm={() =>
        appApi(appId)
          .subscriptions.resume(accountId)
          .then(() => undefined)
      }
    >
      <Text size="sm">
        {offered.undoesCancel
          ? `Billing goes on at the payment provider: ${sub.plan} renews on ${day(sub.renews_at)} as before.`
          : `Billing starts again at the payment provider now and the account gets ` +
            `${sub.pause?.restore_plan ?? sub.plan} back (the pause was until ${day(sub.pause?.resume_at ?? null)}).`}
      </Text>
    </IntentDialog>
  );
}

/** Cancel now, or at the end of the paid period (when the state takes it), each said before it is asked. */
export function CancelDialog(props: DialogProps) {
  const { appId, accountId, sub, offered } = props;
  const periodEnd = offered.intents.has('cancel_period_end');
  const [at, setAt] = useState<'now' | 'period_end'>(periodEnd ? 'period_end' : 'now');
  const [reason, setReason] = useState('');
  const changes = changesOf(sub);
  return (
    <IntentDialog
      {...props}
      title={`Cancel the subscription of ${accountId}?`}
      confirmLabel={at === 'now' ? 'Cancel now' : 'Cancel at the period end'}
      closeLabel="Keep the subscription"
      route="subscriptions.cancel"
      color="red"
      onConfirm={() =>
        appApi(appId)
          .subscriptions.cancel(accountId, { at, ...(reason.trim() ? { reason: reason.trim() } : {}) })
          .then(() => undefined)
      }
    >
      <Radio.Group label="When" value={at} onChange={(v) => setAt(v as 'now' | 'period_end')}>
        <Stack gap="xs" mt={4}>
          <Radio
            value="period_end"
            disabled={!periodEnd}
            label={`At the end of the period (${day(sub.renews_at)})`}
            description={
              periodEnd
                ? `Billing stops at the payment provider now; ${sub.plan} stays until ${day(sub.renews_at)}, then ` +
                  'the subscription is cancelled. You can undo it until then.'
                : sub.status === 'paused'
                  ? 'Not while paused: nothing is billed until the pause ends.'
                  : 'Not in this state.'
            }
          />
          <Radio
            value="now"
            label="Now"
            description={
              'Cancelled at the payment provider at once: nothing more is charged and the account moves to the ' +
              'free plan now. This cannot be undone.'
            }
          />
        </Stack>
      </Radio.Group>
      {changes.length > 0 && (
        <Text size="sm">{changes.map((c) => `The change to ${c!.plan} is dropped.`).join(' ')}</Text>
      )}
      <TextInput
        label="Reason"
        description="Optional; kept with the cancellation"
        value={reason}
        maxLength={500}
        onChange={(e) => setReason(e.currentTarget.value)}
      />
    </IntentDialog>
  );
}

export function RetryDialog(props: DialogProps) {
  const { appId, accountId, sub } = props;
  const owed = sub.dunning?.outstanding ?? sub.price;
  return (
    <IntentDialog
      {...props}
      title="Retry the failed payment?"
      confirmLabel="Retry the payment"
      route="subscriptions.retryPayment"
      onConfirm={() =>
        appApi(appId)
          .subscriptions.retryPayment(accountId)
          .then(() => undefined)
      }
    >
      <Text size="sm">
        The payment provider is asked to charge the outstanding {owed} {sub.currency} now. A payment that goes through
        ends the past-due state; one that fails counts as another failure.
      </Text>
    </IntentDialog>
  );
}
