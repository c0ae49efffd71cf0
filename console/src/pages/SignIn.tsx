import { Anchor, Button, Card, Center, PasswordInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { consoleApi } from '../api';
import { authClient } from '../auth';
import { ErrorText, useAction } from '../ui';

function Frame({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Center mih="100vh" p="md" bg="gray.0">
      <Card withBorder shadow="sm" p="xl" w="100%" maw={420}>
        <Stack>
          <Title order={1} size="h3">
            {title}
          </Title>
          {children}
        </Stack>
      </Card>
    </Center>
  );
}

export function SignInPage({ onDone }: { onDone: () => Promise<void> }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await action.run(async () => {
      const { error } = await authClient.signIn.email({ email, password });
      if (error) throw new Error(error.message ?? 'Sign-in failed');
      await onDone();
    });
  };
  return (
    <Frame title="Sign in to offerkit">
      <form onSubmit={submit}>
        <Stack>
          <TextInput
            label="Email"
            type="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.currentTarget.value)}
          />
          <PasswordInput
            label="Password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
          />
          <ErrorText error={action.error} />
          <Button type="submit" loading={action.busy}>
            Sign in
          </Button>
        </Stack>
      </form>
      <Text size="sm" c="dimmed">
        No account? Ask a workspace owner to invite your email address.
      </Text>
    </Frame>
  );
}

export function SetupPage({ onDone }: { onDone: () => Promise<void> }) {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const [form, setForm] = useState({ name: '', email: '', password: '', workspace: '' });
  const action = useAction();
  const set = (k: keyof typeof form) => (e: { currentTarget: { value: string } }) =>
    setForm({ ...form, [k]: e.currentTarget.value });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await action.run(async () => {
      await consoleApi.post('/setup', { ...form, workspace: form.workspace || undefined, token });
      const { error } = await authClient.signIn.email({ email: form.email, password: form.password });
      if (error) throw new Error(error.message ?? 'Sign-in failed');
      window.history.replaceState(null, '', '/console/');
      await onDone();
    });
  };
  return (
    <Frame title="Set up the owner">
      {!token && (
        <Text size="sm">
          Open the one-time setup link that <code>npm start</code> printed the first time the service started.
        </Text>
      )}
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Your name" required value={form.name} onChange={set('name')} />
          <TextInput
            label="Email"
            type="email"
            autoComplete="username"
            required
            value={form.email}
            onChange={set('email')}
          />
          <PasswordInput
            label="Password"
            description="At least 10 characters"
            autoComplete="new-password"
            required
            value={form.password}
            onChange={set('password')}
          />
          <TextInput
            label="Workspace name"
            placeholder="My workspace"
            value={form.workspace}
            onChange={set('workspace')}
          />
          <ErrorText error={action.error} />
          <Button type="submit" loading={action.busy} disabled={!token}>
            Create the owner
          </Button>
        </Stack>
      </form>
    </Frame>
  );
}

/**
 * The accept page of an invitation link (`/console/invite?token=...`, sent by email to the invited address only). The
 * secret goes to the server in request bodies; the address bar drops it once the page has read it.
 */
export function InvitePage({ onDone }: { onDone: () => Promise<void> }) {
  const [token] = useState(() => new URLSearchParams(window.location.search).get('token') ?? '');
  const navigate = useNavigate();
  const [invite, setInvite] = useState<{ email: string; workspace: string } | null>(null);
  // Signed in already with the invited address: joining needs no new account.
  const [signedInAs, setSignedInAs] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  useEffect(() => {
    window.history.replaceState(null, '', window.location.pathname);
    void action.run(async () => {
      if (!token) throw new Error('This link has no invitation in it: open the link from the email again.');
      setInvite(await consoleApi.post('/invitations/lookup', { token }));
      const me = await consoleApi.get<{ user: { email: string } | null }>('/me');
      setSignedInAs(me.user?.email ?? null);
    });
  }, [token]);
  const joinAsMe = async () => {
    await action.run(async () => {
      await consoleApi.post('/invitations/accept', { token });
      navigate('/', { replace: true });
      await onDone();
    });
  };
  const isInvitee = !!invite && signedInAs?.toLowerCase() === invite.email.toLowerCase();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await action.run(async () => {
      await consoleApi.post('/invitations/accept', { token, name, password });
      const { error } = await authClient.signIn.email({ email: invite!.email, password });
      if (error) throw new Error(error.message ?? 'Sign-in failed');
      navigate('/', { replace: true });
      await onDone();
    });
  };
  return (
    <Frame title={invite ? `Join ${invite.workspace}` : 'Invitation'}>
      {invite && isInvitee && (
        <Stack>
          <Text size="sm">
            You are signed in as <strong>{invite.email}</strong>, the address this invitation is for.
          </Text>
          <Button onClick={() => void joinAsMe()} loading={action.busy}>
            Join the workspace
          </Button>
        </Stack>
      )}
      {invite && !isInvitee && (
        <form onSubmit={submit}>
          <Stack>
            <Text size="sm">
              You were invited as <strong>{invite.email}</strong>.
            </Text>
            <TextInput label="Your name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
            <PasswordInput
              label="Password"
              description="At least 10 characters"
              autoComplete="new-password"
              required
              value={password}
              onChange={(e) => setPassword(e.currentTarget.value)}
            />
            <Button type="submit" loading={action.busy}>
              Join the workspace
            </Button>
          </Stack>
        </form>
      )}
      <ErrorText error={action.error} />
      <Anchor href="/console/" size="sm">
        Sign in instead
      </Anchor>
    </Frame>
  );
}
