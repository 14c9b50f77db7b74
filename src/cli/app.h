#pragma once
// The `flashdraft` command line: subcommands, and the mapping from errors to
// exit codes (0 ok, 1 failure, 2 bad usage: flags, values or paths).
namespace flashdraft::cli {

int run(int argc, char** argv);

}  // namespace flashdraft::cli
