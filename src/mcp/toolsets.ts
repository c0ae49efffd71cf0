import { z } from 'zod';

/**
 * Toolsets: the MCP tools grouped by what an agent works on, so `tools/list` stays small enough for an agent host
 * (issue 43, item 3: at most 20,000 characters by default, for any credential). `tools/list` names the discovery
 * tools (`find_tools`, `call_tool`: src/mcp/discovery.ts), the core tools below, and every tool of the toolsets
 * chosen: by the request (`?toolsets=` on the MCP URL, or the `X-MCP-Toolsets` header), else by the OAuth
 * connection, else by the app's MCP settings (none by default). Listing is not permission: a tool that is not listed
 * is still callable (directly, or through `call_tool`) when the caller may call it, and `find_tools` describes it.
 */

export const TOOLSETS = ['accounts', 'catalog', 'billing', 'webhooks', 'analytics', 'app'] as const;
export type Toolset = (typeof TOOLSETS)[number];
/** `all` lists every tool the caller may call (the list before toolsets: about 160,000 characters). */
export const ALL = 'all';
export type ToolsetChoice = Toolset | typeof ALL;

/** What each toolset holds, for a model (find_tools) and an operator (the console). */
export const TOOLSET_ABOUT: Record<Toolset, string> = {
  accounts: 'Accounts, their access, usage counters and credits',
  catalog: 'Plans, entitlements, add-ons, incentives and pricing cards',
  billing: "Checkout links, plan changes and their quotes, the buyer's offer, an account's billing timeline",
  webhooks: 'Webhook endpoints, their deliveries, test events and the event log',
  analytics: 'Usage summaries, top accounts, usage over time and usage history',
  app: "The app's name and id",
};

/**
 * Listed whatever the choice (where the caller may call them): what most agent work starts with, an account and
 * its usage, recording usage, the plans, and a checkout link. Their output schemas are the list's largest part
 * (typed to every field), so the core stays small; test/api/mcp-tools-size.test.ts holds the list to the budget.
 */
export const CORE_TOOLS: readonly string[] = [
  'list_plans',
  'get_account',
  'get_account_usage',
  'increment_usage',
  'create_upgrade_link',
];

/**
 * Each route tool's toolset and its title (a short name for people, shown by hosts; MCP's `title`). A tool of the
 * route table missing here is caught by test/unit/route-table.test.ts.
 */
export const TOOL_INFO: Record<string, { toolset: Toolset; title: string }> = {
  get_app: { toolset: 'app', title: 'App details' },
  update_app: { toolset: 'app', title: 'Rename the app' },

  list_plans: { toolset: 'catalog', title: 'List plans' },
  list_pricing_cards: { toolset: 'catalog', title: 'Pricing cards' },
  create_plan: { toolset: 'catalog', title: 'Create a plan' },
  get_plan: { toolset: 'catalog', title: 'Plan details' },
  update_plan: { toolset: 'catalog', title: 'Update a plan' },
  delete_plan: { toolset: 'catalog', title: 'Delete a plan' },
  get_pricing_card: { toolset: 'catalog', title: "A plan's pricing card" },
  merge_plan_meta: { toolset: 'catalog', title: "Merge keys into a plan's meta" },
  attach_plan_entitlement: { toolset: 'catalog', title: 'Add an entitlement to a plan' },
  set_plan_entitlement_limit: { toolset: 'catalog', title: "Set a plan's limit" },
  detach_plan_entitlement: { toolset: 'catalog', title: 'Remove an entitlement from a plan' },
  attach_plan_addon: { toolset: 'catalog', title: 'Add an add-on to a plan' },
  detach_plan_addon: { toolset: 'catalog', title: 'Remove an add-on from a plan' },
  list_entitlements: { toolset: 'catalog', title: 'List entitlements' },
  create_entitlement: { toolset: 'catalog', title: 'Create an entitlement' },
  get_entitlement: { toolset: 'catalog', title: 'Entitlement details' },
  update_entitlement: { toolset: 'catalog', title: 'Update an entitlement' },
  delete_entitlement: { toolset: 'catalog', title: 'Delete an entitlement' },
  list_addons: { toolset: 'catalog', title: 'List add-ons' },
  create_addon: { toolset: 'catalog', title: 'Create an add-on' },
  get_addon: { toolset: 'catalog', title: 'Add-on details' },
  update_addon: { toolset: 'catalog', title: 'Update an add-on' },
  delete_addon: { toolset: 'catalog', title: 'Delete an add-on' },
  list_incentives: { toolset: 'catalog', title: 'List incentives' },
  create_incentive: { toolset: 'catalog', title: 'Create an incentive' },
  get_incentive: { toolset: 'catalog', title: 'Incentive details' },
  update_incentive: { toolset: 'catalog', title: 'Update an incentive' },
  delete_incentive: { toolset: 'catalog', title: 'Delete an incentive' },
  attach_incentive_entitlement: { toolset: 'catalog', title: 'Add an entitlement override to an incentive' },
  set_incentive_entitlement_limit: { toolset: 'catalog', title: "Set an incentive override's limit" },
  detach_incentive_entitlement: { toolset: 'catalog', title: 'Remove an entitlement override from an incentive' },
  attach_incentive_addon: { toolset: 'catalog', title: 'Add an add-on to an incentive' },
  detach_incentive_addon: { toolset: 'catalog', title: 'Remove an add-on from an incentive' },

  list_accounts: { toolset: 'accounts', title: 'Search accounts' },
  count_accounts: { toolset: 'accounts', title: 'Count accounts' },
  list_accounts_with_incentive: { toolset: 'accounts', title: 'Accounts with an incentive' },
  create_account: { toolset: 'accounts', title: 'Create an account' },
  get_account: { toolset: 'accounts', title: 'Account details' },
  update_account: { toolset: 'accounts', title: 'Update an account' },
  delete_account: { toolset: 'accounts', title: 'Delete an account' },
  remove_account_incentive: { toolset: 'accounts', title: "Remove an account's incentive" },
  get_account_access: { toolset: 'accounts', title: "An account's access" },
  get_account_access_private: { toolset: 'accounts', title: "An account's access, with private meta" },
  list_plan_accounts: { toolset: 'accounts', title: 'Accounts on a plan' },
  get_account_usage: { toolset: 'accounts', title: "An account's usage" },
  get_usage_count: { toolset: 'accounts', title: 'One usage counter' },
  increment_usage: { toolset: 'accounts', title: 'Record one use' },
  decrement_usage: { toolset: 'accounts', title: 'Take back one use' },
  add_usage_amount: { toolset: 'accounts', title: 'Record an amount of usage' },
  get_credit_balance: { toolset: 'accounts', title: "An account's credits" },
  grant_credits: { toolset: 'accounts', title: 'Grant credits' },
  list_entities: { toolset: 'accounts', title: "An account's entities (members, seats)" },
  create_entity: { toolset: 'accounts', title: 'Register an entity under an account' },
  delete_entity: { toolset: 'accounts', title: 'Delete an entity' },

  create_upgrade_link: { toolset: 'billing', title: 'Checkout link for a plan' },
  create_topup_link: { toolset: 'billing', title: 'Checkout link for a credit pack' },
  get_offer: { toolset: 'billing', title: 'The offer buyers see' },
  quote_subscription_change: { toolset: 'billing', title: 'Quote a plan change' },
  change_subscription: { toolset: 'billing', title: 'Change plan or interval' },
  get_account_timeline: { toolset: 'billing', title: "An account's billing timeline" },

  list_webhooks: { toolset: 'webhooks', title: 'List webhook endpoints' },
  create_webhook: { toolset: 'webhooks', title: 'Add a webhook endpoint' },
  get_webhook: { toolset: 'webhooks', title: 'Webhook endpoint details' },
  update_webhook: { toolset: 'webhooks', title: 'Update a webhook endpoint' },
  delete_webhook: { toolset: 'webhooks', title: 'Delete a webhook endpoint' },
  send_test_event: { toolset: 'webhooks', title: 'Send a test event' },
  list_webhook_deliveries: { toolset: 'webhooks', title: 'Webhook deliveries' },
  retry_webhook_delivery: { toolset: 'webhooks', title: 'Retry a webhook delivery' },
  list_events: { toolset: 'webhooks', title: 'Event log' },

  get_usage_summary: { toolset: 'analytics', title: 'Usage summary' },
  top_accounts_by_usage: { toolset: 'analytics', title: 'Top accounts by usage' },
  get_usage_timeseries: { toolset: 'analytics', title: 'Usage over time' },
  list_usage_events: { toolset: 'analytics', title: 'Usage history' },
};

/** A stored or sent choice: toolset names, or `all`. */
export const toolsetChoiceSchema = z.enum([...TOOLSETS, ALL]);
export const toolsetsSchema = z
  .array(toolsetChoiceSchema)
  .max(TOOLSETS.length + 1)
  .describe(
    `Toolsets listed in tools/list beside the core tools and the discovery tools: ${TOOLSETS.join(', ')}, or ` +
      `${ALL}. Tools not listed stay callable and find_tools describes them.`,
  );

/**
 * A request's choice, from the `toolsets` query parameter or the `X-MCP-Toolsets` header (GitHub's MCP server's
 * name): names separated by commas (spaces allowed), `all`, or empty for the core alone. Null when not sent;
 * a string naming an unknown toolset when one is not known.
 */
export function requestedToolsets(value: string | undefined): ToolsetChoice[] | null | { unknown: string } {
  if (value === undefined) return null;
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.find((n) => !toolsetChoiceSchema.safeParse(n).success);
  if (unknown !== undefined) return { unknown };
  return [...new Set(names)] as ToolsetChoice[];
}

/** Whether a tool is listed under a choice: a core tool, or one of a chosen toolset (or `all`). */
export const listedUnder = (choice: readonly ToolsetChoice[], tool: { name: string; toolset: Toolset }) =>
  CORE_TOOLS.includes(tool.name) || choice.includes(ALL) || choice.includes(tool.toolset);
