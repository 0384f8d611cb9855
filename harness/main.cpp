#include "harness/cli/app.hpp"

int main(int argc, char** argv) { return perfgate::cli::run(argc, argv); }
