#pragma once
// The store tests run against both backends: a SQLite file, and a fresh
// database on the throwaway PostgreSQL server ctest starts (fixture
// "postgres", scripts/services/postgres.sh) and names in PERFGATE_TEST_PG.

#include <filesystem>
#include <memory>
#include <string>

#include "harness/store/store.hpp"

// The backend of a test that runs on both, as Catch2 generates it: the
// test case runs once with backend == "sqlite", once with "postgresql".
#define BOTH_BACKENDS const std::string backend = GENERATE(as<std::string>{}, "sqlite", "postgresql")

namespace perfgate::test {

// The --db spec for `backend` ("sqlite" or "postgresql"): the SQLite path
// itself, or a new, empty PostgreSQL database made the first time `path` is
// asked for (the same one after). Fails the test when there is no server.
std::string database_for(const std::string& backend, const std::filesystem::path& path);

// Opens (creating or upgrading) the store `spec`; fails the test when it cannot.
std::unique_ptr<store::Store> open_or_fail(const std::string& spec);

// Runs SQL on the PostgreSQL database `spec` outside perfgate; returns the
// first column of the first row ("" when none).
std::string pg_query(const std::string& spec, const std::string& sql);

}  // namespace perfgate::test
