#pragma once
// Schema and forward migrations of the SQLite store. The version lives in
// PRAGMA user_version; each migration moves it up by one inside a
// transaction. A database newer than this perfgate is refused, not altered.

struct sqlite3;

#include "harness/util/error.hpp"

namespace perfgate::store {

inline constexpr int k_schema_version = 5;

// Brings the database to k_schema_version; sets application_id on a new file.
Status migrate(sqlite3* db, int application_id);

}  // namespace perfgate::store
