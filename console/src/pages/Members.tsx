// The people of a workspace, for its owners and admins: members with their roles (change, remove), the invitation
// form, and pending invitations (revoke). The routes are the console's own (/console/api/workspaces/:id/...).
import { Alert, Badge, Button, Card, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { consoleApi } from '../api';
import { useSession } from '../session';
import { ConfirmDialog, ErrorText, Loading, useAction, useLoad } from '../ui';

type Role = 'owner' | 'admin' | 'member' | 'viewer';
interface Member {
  user_id: string;
  name: string;
  email: string;
  role: Role;
  joined_at: string;
}
interface Invitation {
  id: string;
  email: string;
  role: Role;
  invited_by: string | null;
  created_at: string;
  expires_at: string;
}
/** What became of an invitation's email: the link itself goes to the invited address only, never to this page. */
interface Sent {
  email: string;
  email_sent: boolean;
  message: string;
}

const ROLE_LABELS: Record<Role, string> = { owner: 'Owner', admin: 'Admin', member: 'Member', viewer: 'Viewer' };

export function MembersSection({
  workspaceId,
  workspaceName,
  role,
}: {
  workspaceId: string;
  workspaceName: string;
  role: string;
}) {
  // The workspace id as it goes in a path; the paths are spelled out so a reader (and the console-coverage test) finds them.
  const ws = encodeURIComponent(workspaceId);
  const members = useLoad(() => consoleApi.get<Member[]>(`/workspaces/${ws}/members`), [workspaceId]);
  const invitations = useLoad(() => consoleApi.get<Invitation[]>(`/workspaces/${ws}/invitations`), [workspaceId]);
  return (
    <Card withBorder>
      <Stack>
        <Title order={3} size="h4">
          People of {workspaceName}
        </Title>
        <Text size="sm" c="dimmed">
          Everyone here sees every app of this workspace: viewers read, members also edit the catalog, offers and
          webhooks, admins also manage keys, payments and people; owners also manage owners.
        </Text>
        <Loading error={members.error}>
          {members.data && <Members list={members.data} ws={ws} canOwn={role === 'owner'} reload={members.reload} />}
        </Loading>
        <Invite ws={ws} onInvited={invitations.reload} />
        <Loading error={invitations.error}>
          {invitations.data && <Invitations list={invitations.data} ws={ws} reload={invitations.reload} />}
        </Loading>
      </Stack>
    </Card>
  );
}

function Members({
  list,
  ws,
  canOwn,
  reload,
}: {
  list: Member[];
  ws: string;
  canOwn: boolean;
  reload: () => Promise<void>;
}) {
  const { me, reload: reloadMe } = useSession();
  const action = useAction(['role']);
  const [removing, setRemoving] = useState<Member | null>(null);
  const roles = (['viewer', 'member', 'admin', ...(canOwn ? ['owner'] : [])] as Role[]).map((r) => ({
    value: r,
    label: ROLE_LABELS[r],
  }));
  return (
    <Stack gap="xs">
      <Table.ScrollContainer minWidth={0}>
        <Table aria-label="Members" verticalSpacing="xs">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Person</Table.Th>
              <Table.Th>Role</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.map((m) => {
              // Owners are changed by owners only; the server decides, the controls follow.
              const locked = m.role === 'owner' && !canOwn;
              // The only owner can be neither removed nor demoted (the server refuses): said before the click.
              const onlyOwner = m.role === 'owner' && list.filter((x) => x.role === 'owner').length === 1;
              const why = `only-owner-${m.user_id}`;
              return (
                <Table.Tr key={m.user_id}>
                  <Table.Td>
                    <Text size="sm" fw={500}>
                      {m.name}
                      {m.user_id === me.user.id && (
                        <Badge ml={6} size="xs" variant="light">
                          you
                        </Badge>
                      )}
                    </Text>
                    <Text size="xs" c="dimmed" style={{ wordBreak: 'break-all' }}>
                      {m.email}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    {locked ? (
                      <Text size="sm">{ROLE_LABELS[m.role]}</Text>
                    ) : (
                      <Select
                        aria-label={`Role of ${m.email}`}
                        size="xs"
                        w={120}
                        data={roles}
                        value={m.role}
                        disabled={onlyOwner}
                        aria-describedby={onlyOwner ? why : undefined}
                        data-route="console.updateMember"
                        allowDeselect={false}
                        onChange={(v) =>
                          v &&
                          v !== m.role &&
                          action.run(async () => {
                            await consoleApi.patch(`/workspaces/${ws}/members/${encodeURIComponent(m.user_id)}`, {
                              role: v,
                            });
                            await reload();
                            if (m.user_id === me.user.id) await reloadMe();
                          })
                        }
                      />
                    )}
                  </Table.Td>
                  <Table.Td>
                    {!locked && (
                      <Button
                        size="compact-xs"
                        color="red"
                        variant="subtle"
                        disabled={onlyOwner}
                        aria-describedby={onlyOwner ? why : undefined}
                        data-route="console.removeMember"
                        onClick={() => setRemoving(m)}
                      >
                        Remove
                      </Button>
                    )}
                    {onlyOwner && (
                      <Text size="xs" c="dimmed" id={why}>
                        A workspace keeps at least one owner
                      </Text>
                    )}
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      <ErrorText error={action.rawError} />
      <ConfirmDialog
        opened={!!removing}
        route="console.removeMember"
        title={`Remove ${removing?.name ?? ''} from the workspace?`}
        confirmLabel="Remove"
        onClose={() => setRemoving(null)}
        onConfirm={async () => {
          await consoleApi.del(`/workspaces/${ws}/members/${encodeURIComponent(removing!.user_id)}`);
          await reload();
          if (removing!.user_id === me.user.id) await reloadMe();
        }}
      >
        <Text size="sm">
          {removing?.email} loses access to every app of this workspace at once. Their sign-in stays for other
          workspaces; someone who joined through an invitation and is in no other workspace is deleted. Invite them
          again to bring them back.
        </Text>
      </ConfirmDialog>
    </Stack>
  );
}

function Invite({ ws, onInvited }: { ws: string; onInvited: () => Promise<void> }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<string>('member');
  const [sent, setSent] = useState<Sent | null>(null);
  const action = useAction(['email', 'role']);
  return (
    <form
      onSubmit={async (e) => {
        e.preventDefault();
        setSent(null);
        const ok = await action.run(async () => {
          setSent(await consoleApi.post<Sent>(`/workspaces/${ws}/invitations`, { email, role }));
        });
        if (ok) {
          setEmail('');
          await onInvited();
        }
      }}
    >
      <Stack gap="xs">
        <Title order={4} size="h5">
          Invite someone
        </Title>
        <Text size="xs" c="dimmed">
          The invitation link goes to this address by email and works for 48 hours, for this address only: whoever joins
          has read its mail.
        </Text>
        <Group align="flex-start" gap="xs" wrap="wrap">
          <TextInput
            label="Email"
            type="email"
            required
            miw={220}
            style={{ flex: 1 }}
            value={email}
            error={action.field('email')}
            onChange={(e) => setEmail(e.currentTarget.value)}
          />
          <Select
            label="Role"
            w={130}
            data={[
              { value: 'viewer', label: 'Viewer' },
              { value: 'member', label: 'Member' },
              { value: 'admin', label: 'Admin' },
            ]}
            value={role}
            error={action.field('role')}
            onChange={(v) => setRole(v ?? 'member')}
            allowDeselect={false}
          />
        </Group>
        <ErrorText error={action.error} />
        <Button type="submit" w="fit-content" loading={action.busy} data-route="console.invite">
          Send invitation
        </Button>
        {sent && <SentNote sent={sent} />}
      </Stack>
    </form>
  );
}

/** Whether the email went; when it did not, what to do (the message is the server's). */
function SentNote({ sent }: { sent: Sent }) {
  return (
    <Alert color={sent.email_sent ? 'teal' : 'yellow'} role="status" title={sent.email_sent ? 'Sent' : 'Not sent'}>
      {sent.message}
    </Alert>
  );
}

function Invitations({ list, ws, reload }: { list: Invitation[]; ws: string; reload: () => Promise<void> }) {
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  const [sent, setSent] = useState<Sent | null>(null);
  const action = useAction();
  return (
    <Stack gap="xs">
      <Title order={4} size="h5">
        Pending invitations
      </Title>
      {list.length === 0 ? (
        <Text size="sm" c="dimmed">
          None.
        </Text>
      ) : (
        <Table.ScrollContainer minWidth={0}>
          <Table aria-label="Pending invitations" verticalSpacing="xs">
            <Table.Tbody>
              {list.map((i) => (
                <Table.Tr key={i.id}>
                  <Table.Td>
                    <Text size="sm" style={{ wordBreak: 'break-all' }}>
                      {i.email}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {ROLE_LABELS[i.role]} · until {new Date(i.expires_at).toLocaleString()}
                      {i.invited_by ? ` · by ${i.invited_by}` : ''}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} justify="flex-end" wrap="wrap">
                      <Button
                        size="compact-xs"
                        variant="subtle"
                        aria-label={`Send the invitation of ${i.email} again`}
                        data-route="console.resendInvitation"
                        onClick={() =>
                          action.run(async () =>
                            setSent(
                              await consoleApi.post<Sent>(
                                `/workspaces/${ws}/invitations/${encodeURIComponent(i.id)}/resend`,
                              ),
                            ),
                          )
                        }
                      >
                        Send again
                      </Button>
                      <Button
                        size="compact-xs"
                        color="red"
                        variant="subtle"
                        data-route="console.revokeInvitation"
                        onClick={() => setRevoking(i)}
                      >
                        Revoke
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {sent && <SentNote sent={sent} />}
      <ErrorText error={action.error} title="Not sent" />
      <ConfirmDialog
        opened={!!revoking}
        route="console.revokeInvitation"
        title={`Revoke the invitation of ${revoking?.email ?? ''}?`}
        confirmLabel="Revoke"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          await consoleApi.del(`/workspaces/${ws}/invitations/${encodeURIComponent(revoking!.id)}`);
          await reload();
        }}
      >
        <Text size="sm">
          The link sent to {revoking?.email} stops working at once. You can invite the address again later.
        </Text>
      </ConfirmDialog>
    </Stack>
  );
}
