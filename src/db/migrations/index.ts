import type { Migration, MigrationProvider } from 'kysely';
import * as m001 from './001_foundation.js';
import * as m002 from './002_catalog.js';
import * as m003 from './003_runs.js';
import * as m004 from './004_scale_out.js';
import * as m005 from './005_model_limits.js';
import * as m006 from './006_dashboard.js';
import * as m007 from './007_grader_evaluators.js';
import * as m008 from './008_files.js';
import * as m009 from './009_model_api.js';
import * as m010 from './010_monitors.js';
import * as m011 from './011_evals.js';
import * as m012 from './012_stored_completions.js';
import * as m013 from './013_response_cache.js';
import * as m014 from './014_budgets.js';
import * as m015 from './015_run_names.js';
import * as m016 from './016_monitor_mark.js';
import * as m017 from './017_chunk_claim_order.js';
import * as m018 from './018_run_sides_once.js';
import * as m021 from './021_missing_reason.js';
import * as m022 from './022_log_trace_session.js';
import * as m023 from './023_traces.js';
import * as m024 from './024_sessions.js';
import * as m025 from './025_review.js';
import * as m026 from './026_session_monitors.js';
import * as m027 from './027_conversation_calls.js';
import * as m029 from './029_trace_indexes.js';
import * as m031 from './031_span_log_events.js';
import * as m032 from './032_session_end.js';
import * as m033 from './033_key_reviewers.js';
import * as m034 from './034_prompts.js';
import * as m035 from './035_dataset_versions.js';
import * as m036 from './036_review_settlements.js';
import * as m037 from './037_guards.js';
import * as m038 from './038_invitation_links.js';

/** Every migration, in order. One set serves SQLite and PostgreSQL. */
const migrations: Record<string, Migration> = {
  '001_foundation': m001,
  '002_catalog': m002,
  '003_runs': m003,
  '004_scale_out': m004,
  '005_model_limits': m005,
  '006_dashboard': m006,
  '007_grader_evaluators': m007,
  '008_files': m008,
  '009_model_api': m009,
  '010_monitors': m010,
  '011_evals': m011,
  '012_stored_completions': m012,
  '013_response_cache': m013,
  '014_budgets': m014,
  '015_run_names': m015,
  '016_monitor_mark': m016,
  '017_chunk_claim_order': m017,
  '018_run_sides_once': m018,
  '021_missing_reason': m021,
  '022_log_trace_session': m022,
  '023_traces': m023,
  '024_sessions': m024,
  '025_review': m025,
  '026_session_monitors': m026,
  '027_conversation_calls': m027,
  '031_span_log_events': m031,
  '029_trace_indexes': m029,
  '032_session_end': m032,
  '033_key_reviewers': m033,
  '034_prompts': m034,
  '035_dataset_versions': m035,
  '036_review_settlements': m036,
  '037_guards': m037,
  '038_invitation_links': m038,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
