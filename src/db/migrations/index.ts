// Every committed migration, in order. Migrations from the second on are hand-written SQL (composite
// keys, foreign-key actions, partial indexes); test/api/schema.test.ts checks the entities agree with them.
import { Migration20261121082939_initial } from './Migration20261121082939_initial.js';
import { Migration20261121090000_catalog } from './Migration20261121090000_catalog.js';
import { Migration20261121091000_analytics_indexes } from './Migration20261121091000_analytics_indexes.js';
import { Migration20261121100000_webhooks } from './Migration20261121100000_webhooks.js';
import { Migration20261121110000_payments } from './Migration20261121110000_payments.js';
import { Migration20261121120000_offers } from './Migration20261121120000_offers.js';
import { Migration20261121130000_checkouts } from './Migration20261121130000_checkouts.js';
import { Migration20261121140000_subscriptions } from './Migration20261121140000_subscriptions.js';
import { Migration20261121150000_billing_sync } from './Migration20261121150000_billing_sync.js';
import { Migration20261121160000_checkout_bumps_paid } from './Migration20261121160000_checkout_bumps_paid.js';
import { Migration20261121170000_cancel_flows } from './Migration20261121170000_cancel_flows.js';
import { Migration20261121180000_mcp_oauth } from './Migration20261121180000_mcp_oauth.js';
import { Migration20261123090000_security } from './Migration20261123090000_security.js';
import { Migration20261123090000_idempotency_keys } from './Migration20261123090000_idempotency_keys.js';
import { Migration20261123091000_usage_reservations } from './Migration20261123091000_usage_reservations.js';
import { Migration20261123092000_usage_ingest } from './Migration20261123092000_usage_ingest.js';
import { Migration20261124090000_usage_ingest_sets } from './Migration20261124090000_usage_ingest_sets.js';
import { Migration20261124091000_apps_notify } from './Migration20261124091000_apps_notify.js';
import { Migration20261124092000_usage_rollup } from './Migration20261124092000_usage_rollup.js';
import { Migration20261123093000_reconciler } from './Migration20261123093000_reconciler.js';
import { Migration20261125090000_subscriptions_list } from './Migration20261125090000_subscriptions_list.js';
import { Migration20261126090000_cursor_lists } from './Migration20261126090000_cursor_lists.js';
import { Migration20261128090000_usage_ingest_by_key } from './Migration20261128090000_usage_ingest_by_key.js';
import { Migration20261129090000_usage_rollup_hours } from './Migration20261129090000_usage_rollup_hours.js';
import { Migration20261129100000_usage_late_per_statement } from './Migration20261129100000_usage_late_per_statement.js';
import { Migration20261130120000_people_tenancy } from './Migration20261130120000_people_tenancy.js';
import { Migration20261127090000_usage_rows_unreferenced } from './Migration20261127090000_usage_rows_unreferenced.js';
import { Migration20261126081538_apps_delete_complete } from './Migration20261126081538_apps_delete_complete.js';
import { Migration20261201090000_mcp_person_connections } from './Migration20261201090000_mcp_person_connections.js';
import { Migration20261130090000_outbox_claims } from './Migration20261130090000_outbox_claims.js';
import { Migration20261201090000_one_live_subscription } from './Migration20261201090000_one_live_subscription.js';
import { Migration20261201100000_pending_saves } from './Migration20261201100000_pending_saves.js';
import { Migration20261201110000_checkout_funnel } from './Migration20261201110000_checkout_funnel.js';
import { Migration20261201120000_plan_change_policy } from './Migration20261201120000_plan_change_policy.js';
import { Migration20261201130000_untracked_subscriptions } from './Migration20261201130000_untracked_subscriptions.js';
import { Migration20261201140000_checkout_refund } from './Migration20261201140000_checkout_refund.js';
import { Migration20261202090000_mcp_guardrails } from './Migration20261202090000_mcp_guardrails.js';
import { Migration20261202100000_mcp_settings_notify } from './Migration20261202100000_mcp_settings_notify.js';
import { Migration20261203090000_publishable_first_use } from './Migration20261203090000_publishable_first_use.js';
import { Migration20261203100000_mcp_elicitations } from './Migration20261203100000_mcp_elicitations.js';
import { Migration20261210090000_oauth_metadata_fresh } from './Migration20261210090000_oauth_metadata_fresh.js';
import { Migration20261211010000_invitation_tokens } from './Migration20261211010000_invitation_tokens.js';
import { Migration20261220090000_account_actor } from './Migration20261220090000_account_actor.js';
import { Migration20261220100000_claim_owner } from './Migration20261220100000_claim_owner.js';
import { Migration20261221090000_checkout_expiry } from './Migration20261221090000_checkout_expiry.js';
import { Migration20261222090000_mcp_oauth_cache } from './Migration20261222090000_mcp_oauth_cache.js';
import { Migration20261223090000_credits } from './Migration20261223090000_credits.js';
import { Migration20261224090000_access_changes } from './Migration20261224090000_access_changes.js';
import { Migration20261226090000_credits_stream } from './Migration20261226090000_credits_stream.js';
import { Migration20261227090000_mcp_toolsets } from './Migration20261227090000_mcp_toolsets.js';
import { Migration20261228090000_credits_holds_ingest } from './Migration20261228090000_credits_holds_ingest.js';
import { Migration20261228100000_credit_packs } from './Migration20261228100000_credit_packs.js';
import { Migration20261228110000_account_entities } from './Migration20261228110000_account_entities.js';
import { Migration20261228120000_pack_orders_captured_index } from './Migration20261228120000_pack_orders_captured_index.js';
import { Migration20261229090000_entity_usage_limits } from './Migration20261229090000_entity_usage_limits.js';
import { Migration20261230090000_access_flush_fresh } from './Migration20261230090000_access_flush_fresh.js';

export const migrationsList = [
  Migration20261121082939_initial,
  Migration20261121090000_catalog,
  Migration20261121091000_analytics_indexes,
  Migration20261121100000_webhooks,
  Migration20261121110000_payments,
  Migration20261121120000_offers,
  Migration20261121130000_checkouts,
  Migration20261121140000_subscriptions,
  Migration20261121150000_billing_sync,
  Migration20261121160000_checkout_bumps_paid,
  Migration20261121170000_cancel_flows,
  Migration20261121180000_mcp_oauth,
  Migration20261123090000_security,
  Migration20261123090000_idempotency_keys,
  Migration20261123091000_usage_reservations,
  Migration20261123092000_usage_ingest,
  Migration20261124090000_usage_ingest_sets,
  Migration20261124091000_apps_notify,
  Migration20261124092000_usage_rollup,
  Migration20261123093000_reconciler,
  Migration20261125090000_subscriptions_list,
  Migration20261126090000_cursor_lists,
  Migration20261127090000_usage_rows_unreferenced,
  Migration20261128090000_usage_ingest_by_key,
  Migration20261129090000_usage_rollup_hours,
  Migration20261129100000_usage_late_per_statement,
  Migration20261126081538_apps_delete_complete,
  Migration20261130120000_people_tenancy,
  Migration20261130090000_outbox_claims,
  Migration20261201090000_mcp_person_connections,
  Migration20261201090000_one_live_subscription,
  Migration20261201100000_pending_saves,
  Migration20261201110000_checkout_funnel,
  Migration20261201120000_plan_change_policy,
  Migration20261201130000_untracked_subscriptions,
  Migration20261201140000_checkout_refund,
  Migration20261202090000_mcp_guardrails,
  Migration20261202100000_mcp_settings_notify,
  Migration20261203090000_publishable_first_use,
  Migration20261203100000_mcp_elicitations,
  Migration20261210090000_oauth_metadata_fresh,
  Migration20261211010000_invitation_tokens,
  Migration20261220090000_account_actor,
  Migration20261220100000_claim_owner,
  Migration20261221090000_checkout_expiry,
  Migration20261222090000_mcp_oauth_cache,
  Migration20261223090000_credits,
  Migration20261224090000_access_changes,
  Migration20261226090000_credits_stream,
  Migration20261227090000_mcp_toolsets,
  Migration20261228090000_credits_holds_ingest,
  Migration20261228100000_credit_packs,
  Migration20261228110000_account_entities,
  Migration20261228120000_pack_orders_captured_index,
  Migration20261229090000_entity_usage_limits,
  Migration20261230090000_access_flush_fresh,
];
