#pragma once

namespace perfgate::cli {

// Parses argv, runs one subcommand, and returns the process exit code
// (docs/cli.md). Every error becomes one message on stderr.
int run(int argc, char** argv);

}  // namespace perfgate::cli
