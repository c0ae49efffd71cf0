/** A count and its noun, singular for one: `plural(1, 'account')` is "1 account", `plural(3, 'account')` "3 accounts". */
export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? singular : pluralForm}`;
}
