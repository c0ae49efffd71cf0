// Preview: the save offer the stored flow shows for the answers a person picks, as the API chooses it.
import { Button, Card, Select, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import type { CancelFlowsGetResponse, CancelFlowsPreviewOfferResponse } from '@offerkit/sdk';
import { useEffect, useState } from 'react';
import type { AppApi } from '../../api';
import { ErrorText } from '../../ui';
import type { StepBody } from '../CancelFlowEditor';

type Flow = CancelFlowsGetResponse;

export function OfferPreview({ api, flow }: { api: AppApi; flow: Flow }) {
  const steps = flow.steps as StepBody[];
  const questions = steps.filter((s) => s.type === 'question' && s.answers?.length);
  const offerSteps = steps.filter((s) => s.type === 'offer');
  const [answers, setAnswers] = useState<Record<string, string>>(
    Object.fromEntries(questions.map((q) => [q.id, q.answers?.[0]?.id ?? ''])),
  );
  const [step, setStep] = useState<string | null>(offerSteps[0]?.id ?? null);
  const [result, setResult] = useState<CancelFlowsPreviewOfferResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const key = JSON.stringify({ answers, step });
  useEffect(() => {
    if (!offerSteps.length) return;
    const body = JSON.parse(key) as { answers: Record<string, string>; step: string | null };
    let current = true;
    api.cancelFlows.previewOffer(flow.id, { answers: body.answers, ...(body.step ? { step: body.step } : {}) }).then(
      (r) => current && (setResult(r), setError(null)),
      (e: Error) => current && setError(e.message),
    );
    return () => {
      current = false;
    };
  }, [api, flow.id, key, offerSteps.length]);
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Preview: the offer for these answers
        </Title>
        <Text size="xs" c="dimmed">
          From the saved flow, before any account checks (an offer that does not apply to an account is skipped).
        </Text>
        {offerSteps.length === 0 ? (
          <Text size="sm">The flow has no offer step: every customer goes straight on to confirm.</Text>
        ) : (
          <>
            <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }} spacing="xs">
              {offerSteps.length > 1 && (
                <Select
                  label="Offer step"
                  data={offerSteps.map((s) => ({ value: s.id, label: `${s.title} (${s.id})` }))}
                  value={step}
                  onChange={setStep}
                  allowDeselect={false}
                />
              )}
              {questions.map((q) => (
                <Select
                  key={q.id}
                  label={q.title}
                  data={(q.answers ?? []).map((a) => ({ value: a.id, label: a.label }))}
                  value={answers[q.id] || null}
                  onChange={(v) => setAnswers({ ...answers, [q.id]: v ?? '' })}
                  allowDeselect={false}
                />
              ))}
            </SimpleGrid>
            <ErrorText error={error} title="No preview" />
            {result && (
              <Card withBorder bg="gray.0" aria-label="Offer preview">
                {result.offer ? (
                  <Stack gap={4}>
                    <Text fw={700}>{result.offer.headline}</Text>
                    <Text size="sm">{result.offer.body}</Text>
                    <Button size="xs" w="fit-content" variant="light" tabIndex={-1}>
                      {result.offer.cta}
                    </Button>
                  </Stack>
                ) : (
                  <Text size="sm">No offer for these answers: the offer step is skipped.</Text>
                )}
              </Card>
            )}
          </>
        )}
      </Stack>
    </Card>
  );
}
