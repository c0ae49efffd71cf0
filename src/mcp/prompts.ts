import { MCP_ACCOUNT_ARG } from '../http/route.js';

/** The four prompts: each expands to one user message naming the tools to use. */
export const PROMPTS = [
  {
    name: 'review_catalog',
    title: 'Review the catalog',
    description:
      'Audit the catalog for unused records, dangling references and inconsistent limits, and suggest fixes ' +
      'without applying them',
    arguments: [],
  },
  {
    name: 'investigate_account',
    title: 'Investigate an account',
    description: "Explain an account's plan, incentive, add-ons, usage and recent events",
    arguments: [{ name: MCP_ACCOUNT_ARG, description: 'The account id', required: true }],
  },
  {
    name: 'launch_incentive',
    title: 'Launch an incentive',
    description: 'Design an incentive for a goal and, after confirmation, create it',
    arguments: [
      { name: 'goal', description: 'What the incentive should achieve', required: true },
      { name: 'plan', description: 'The plan it is meant for (optional)', required: false },
    ],
  },
  {
    name: 'debug_webhooks',
    title: 'Debug webhooks',
    description: 'Find out why webhook deliveries fail and how to fix it',
    arguments: [{ name: 'webhookId', description: 'One endpoint to look at (optional)', required: false }],
  },
] as const;

export function promptMessage(name: string, args: Record<string, string>) {
  let text: string;
  switch (name) {
    case 'review_catalog':
      text =
        'Review the catalog of this app. Read offer://catalog (or call list_plans, list_entitlements, list_addons, ' +
        'list_incentives and list_pricing_cards). ' +
        'Look for unused records (entitlements or add-ons on no plan or incentive, plans without accounts: use ' +
        'list_plan_accounts), dangling references, ' +
        'and inconsistent limits (a higher plan granting less than a lower one, pricing cards that disagree with ' +
        'limits). ' +
        'Report what you find with suggested fixes, but do not apply any change.';
      break;
    case 'investigate_account':
      text =
        `Investigate the account ${JSON.stringify(args[MCP_ACCOUNT_ARG])}. Call get_account, get_account_access and ` +
        `get_account_usage with ${MCP_ACCOUNT_ARG} ${JSON.stringify(args[MCP_ACCOUNT_ARG])}, ` +
        'then list_usage_events and list_events for its recent history, and get_plan for its plan. Explain its ' +
        'plan, incentive, add-ons, usage against each limit, and anything unusual.';
      break;
    case 'launch_incentive':
      text =
        `Help me launch an incentive. Goal: ${JSON.stringify(args.goal)}.` +
        (args.plan ? ` It is meant for the plan ${JSON.stringify(args.plan)} (read it with get_plan).` : '') +
        ' Read the catalog first (list_plans, list_entitlements, list_addons, list_incentives), propose the ' +
        'incentive (limits and add-ons), ' +
        'and only after I confirm, create it with create_incentive, attach_incentive_entitlement and ' +
        'attach_incentive_addon.';
      break;
    default:
      text =
        (args.webhookId
          ? `Debug the webhook endpoint ${JSON.stringify(args.webhookId)}: call get_webhook and `
          : "Debug this app's webhooks: call list_webhooks, then for each failing endpoint ") +
        'list_webhook_deliveries with status failed. Explain the failures (status codes, errors). Suggest fixes; ' +
        'with my confirmation you may use send_test_event or retry_webhook_delivery.';
  }
  return { role: 'user' as const, content: { type: 'text' as const, text } };
}
