// What the billing pages share: the checkouts' status colours, the account link, the page size, dates kept whole.
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

const DATE = /(\d{4}-\d\d-\d\d(?: \d\d:\d\d)?)/;

/**
 * A text whose days (2026-12-28, with a time of day) are never broken at their hyphens on a phone's width, where
 * "scheduled for 2026-" then "12-28" on the next line reads as two things. The text itself is unchanged.
 */
export function Dated({ text }: { text: string }) {
  return (
    <>
      {text.split(DATE).map((part, i) =>
        i % 2 ? (
          <span key={i} style={nowrap}>
            {part}
          </span>
        ) : (
          part
        ),
      )}
    </>
  );
}
