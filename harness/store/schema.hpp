#pragma once
// Schema and forward migrations of the SQLite store. The version lives in
// PRAGMA user_version; each migration moves it up by one inside a
// transaction. A database newer than this perfgate is refused, not altered.

struct sqlite3;

#include <span>

#include "harness/util/error.hpp"

namespace perfgate::store {

inline constexpr int k_schema_version = 9;

// Brings the database to k_schema_version; sets application_id on a new file.
Status migrate(sqlite3* db, int application_id);

// The migrations' SQL as written for SQLite; the PostgreSQL store runs the
// same list translated to its dialect (pg_store.cpp), so both backends hold
// one schema at one version.
std::span<const char* const> migration_sql();

// The columns of `runs` every store reads, in RunRecord order.
inline constexpr const char* k_run_columns =
    "id, suite, suite_path, description, started_at, ended_at, status, host, pid, fingerprint, fingerprint_hash, "
    "git_commit, git_branch, seed, argv, env, plan, artifacts_dir, perfgate_version, kind, soak_duration_s, "
    "soak_window_s, soak_hang_after_s";
inline constexpr int k_run_column_count = 23;

}  // namespace perfgate::store
