// What the subscriptions and checkouts lists share: the checkouts' status colours, the account link, the page size.
import { Anchor } from '@mantine/core';
import { Link } from 'react-router';

export const CHECKOUT_COLORS: Record<string, string> = {
  created: 'yellow',
  completed: 'teal',
  cancelled: 'gray',
  expired: 'gray',
};
export const PAGE_SIZE = 20;

export const accountLink = (appId: string, a: string | null) =>
  a ? (
    <Anchor component={Link} to={`/apps/${appId}/accounts/${encodeURIComponent(a)}`} size="sm">
      {a}
    </Anchor>
  ) : (
    '—'
  );
export const nowrap = { whiteSpace: 'nowrap' } as const;
