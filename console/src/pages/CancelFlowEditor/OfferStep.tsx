// An offer step: its decline button, who chooses the offer (static rules, or a model within guardrails), and the
// static offers in the order they are tried.
import { Button, SegmentedControl, Stack, Text, TextInput } from '@mantine/core';
import { DEFAULT_DYNAMIC, offerForm, type FlowCatalog, type OfferForm, type StepForm } from './form';
import { Guardrails } from './Guardrails';
import { OfferCard } from './OfferCard';

export function OfferStep({
  step: s,
  catalog,
  answerChoices,
  err,
  onChange,
}: {
  step: StepForm;
  catalog: FlowCatalog;
  answerChoices: { value: string; label: string }[];
  err: (k: string) => string | undefined;
  onChange: (patch: Partial<StepForm>) => void;
}) {
  const model = !!s.dynamic?.enabled;
  const setOffer = (i: number, patch: Partial<OfferForm>) =>
    onChange({ offers: s.offers.map((o, j) => (j === i ? { ...o, ...patch } : o)) });
  const moveOffer = (i: number, by: -1 | 1) => {
    const offers = [...s.offers];
    [offers[i], offers[i + by]] = [offers[i + by], offers[i]];
    onChange({ offers });
  };
  return (
    <Stack gap={8}>
      <TextInput
        label="Decline button"
        aria-label={`Step ${s.id} decline label`}
        placeholder="No thanks"
        size="xs"
        value={s.decline_label}
        onChange={(e) => onChange({ decline_label: e.currentTarget.value })}
        error={err(`${s.key}.decline_label`)}
      />
      <Stack gap={4}>
        <Text size="sm" fw={600}>
          Who chooses the offer
        </Text>
        <SegmentedControl
          aria-label={`Step ${s.id} offer choice`}
          size="xs"
          fullWidth
          data={[
            { value: 'static', label: 'Static rules' },
            { value: 'model', label: 'Model, within guardrails' },
          ]}
          value={model ? 'model' : 'static'}
          onChange={(v) =>
            onChange({
              dynamic:
                v === 'model'
                  ? { ...(s.dynamic ?? DEFAULT_DYNAMIC), enabled: true }
                  : s.dynamic && { ...s.dynamic, enabled: false },
            })
          }
        />
      </Stack>
      {model && s.dynamic && (
        <Guardrails step={s} dynamic={s.dynamic} catalog={catalog} err={err} onChange={onChange} />
      )}
      <Text size="sm" fw={600}>
        {model ? 'Static offers (used when the model is not asked, or its choice cannot be used)' : 'Offers'}
      </Text>
      <Text size="xs" c="dimmed">
        The first offer whose answers match and that applies to the account is shown; none applies: the step is skipped.
      </Text>
      {s.offers.map((o, i) => (
        <OfferCard
          key={i}
          stepId={s.id}
          index={i}
          count={s.offers.length}
          offer={o}
          catalog={catalog}
          answerChoices={answerChoices}
          err={(f) => err(`${s.key}.offers.${i}.${f}`)}
          onChange={(patch) => setOffer(i, patch)}
          onMove={(by) => moveOffer(i, by)}
          onRemove={() => onChange({ offers: s.offers.filter((_, j) => j !== i) })}
        />
      ))}
      {err(`${s.key}.offers`) && (
        <Text size="xs" c="red" role="alert">
          {err(`${s.key}.offers`)}
        </Text>
      )}
      <Button
        size="xs"
        variant="light"
        w="fit-content"
        aria-label={`Add an offer to ${s.id}`}
        disabled={s.offers.length >= 20}
        onClick={() => onChange({ offers: [...s.offers, offerForm({ kind: 'discount', percent: 20, cycles: 3 })] })}
      >
        Add an offer
      </Button>
    </Stack>
  );
}
