// Guardrails of the secret key's MCP connection, and the editor dialog the connections' guardrails share.
import { Button, Card, Group, Modal, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { useParams } from 'react-router';
import { adminApi } from '../../api';
import { ErrorText, useAction } from '../../ui';
import { EditableArea } from '../Catalog/shared';
import { capsOf, GuardrailsEditor, GuardrailsSummary, type Guardrails, type GuardrailsView } from '../Guardrails';
import { type Connection } from './shared';

/** The caps of the app's key-based MCP use (secret and admin key sessions share them). */
export function KeyGuardrailsCard({
  view,
  entitlements,
  onSaved,
  canEdit,
}: {
  view: GuardrailsView;
  entitlements: string[];
  onSaved: () => Promise<void>;
  canEdit: boolean;
}) {
  const { appId } = useParams();
  const [caps, setCaps] = useState<Guardrails>(capsOf(view));
  const action = useAction();
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={3} size="h5">
          Key guard-rails
        </Title>
        <Text size="xs" c="dimmed">
          Caps for MCP clients that use the secret or admin key (each OAuth connection has its own, below). A call that
          would pass a cap is refused with which cap, what is left and where to raise it.
        </Text>
        <GuardrailsSummary view={view} />
        {canEdit && (
          <>
            {/* Locked while a save and the reload after it run (the card is then drawn anew from what was saved). */}
            <EditableArea canEdit={!action.busy}>
              <GuardrailsEditor value={caps} onChange={setCaps} entitlements={entitlements} />
            </EditableArea>
            <ErrorText error={action.error} />
            <Button
              w="fit-content"
              loading={action.busy}
              data-route="mcp.updateSettings"
              onClick={() =>
                action.run(async () => {
                  await adminApi(appId!).patch('/mcp/settings', { key_guardrails: caps });
                  await onSaved();
                })
              }
            >
              Save key guard-rails
            </Button>
          </>
        )}
      </Stack>
    </Card>
  );
}

/** An OAuth connection's caps, in a dialog. */
export function EditGuardrails({
  connection,
  entitlements,
  onClose,
}: {
  connection: Connection;
  entitlements: string[];
  onClose: (saved: boolean) => Promise<void>;
}) {
  const { appId } = useParams();
  const [caps, setCaps] = useState<Guardrails>(capsOf(connection.guardrails));
  const action = useAction();
  return (
    <Modal opened onClose={() => void onClose(false)} title={`Guard-rails of ${connection.name}`} size="lg">
      <Stack gap="sm">
        <GuardrailsSummary view={connection.guardrails} />
        <GuardrailsEditor value={caps} onChange={setCaps} entitlements={entitlements} />
        <ErrorText error={action.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={() => void onClose(false)}>
            Cancel
          </Button>
          <Button
            loading={action.busy}
            data-route="mcp.updateConnection"
            onClick={() =>
              action.run(async () => {
                await adminApi(appId!).patch(`/mcp/connections/${encodeURIComponent(connection.id)}`, {
                  guardrails: caps,
                });
                await onClose(true);
              })
            }
          >
            Save guard-rails
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** Who approved a connection, or its kind for key sessions. */
