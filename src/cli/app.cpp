#include "cli/app.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/bench_serve_command.h"
#include "cli/generate_command.h"
#include "cli/inspect_command.h"
#include "cli/token_commands.h"
#include "core/error.h"
#include "server/serve_command.h"

namespace flashdraft::cli {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Errors are one line, so they stay readable after streamed output and in logs.
int fail(int code, std::string_view message) {
  std::string line(message);
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  std::fflush(stdout);
  fmt::print(stderr, "flashdraft: error: {}\n", line);
  return code;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"flashdraft: LLM inference for Qwen3 models, with DFlash speculative decoding", "flashdraft"};
  app.require_subcommand(1, 1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  app.set_version_flag("--version", "flashdraft " FLASHDRAFT_VERSION);
  app.footer("Run 'flashdraft SUBCOMMAND --help' for the flags of a subcommand.");
  // Later subcommands (serve, bench) register here the same way.
  GenerateOptions generate;
  TokenizeOptions tokenize;
  DetokenizeOptions detokenize;
  CLI::App* generate_cmd = add_generate_command(app, generate);
  CLI::App* tokenize_cmd = add_tokenize_command(app, tokenize);
  CLI::App* detokenize_cmd = add_detokenize_command(app, detokenize);
  BenchServeOptions bench_serve;
  CLI::App* bench_serve_cmd = add_bench_serve_command(app, bench_serve);
  server::ServeOptions serve;
  CLI::App* serve_cmd = server::add_serve_command(app, serve);
  InspectOptions inspect;
  CLI::App* inspect_cmd = add_inspect_command(app, inspect);

  // CLI11 would call a misspelt subcommand "missing"; name it instead.
  auto is_subcommand = [&](const std::string& name) {
    if (bench_serve_cmd->get_parent()->check_name(name)) return true;
    for (const CLI::App* sub : {generate_cmd, tokenize_cmd, detokenize_cmd, serve_cmd, inspect_cmd}) {
      if (sub->check_name(name)) return true;
    }
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !is_subcommand(argv[1])) {
    return fail(kExitUsage, fmt::format("unknown subcommand '{}'; expected bench, generate, inspect, serve, "
                                        "tokenize or detokenize (see 'flashdraft --help')",
                                        argv[1]));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return fail(kExitUsage, fmt::format("{} (see 'flashdraft --help')", e.what()));
  }

  try {
    if (generate_cmd->parsed()) run_generate(generate);
    if (tokenize_cmd->parsed()) run_tokenize(tokenize);
    if (detokenize_cmd->parsed()) run_detokenize(detokenize);
    if (bench_serve_cmd->parsed()) run_bench_serve(bench_serve);
    if (serve_cmd->parsed()) server::run_serve(serve);
    if (inspect_cmd->parsed()) {
      const auto problems = run_inspect(inspect);  // one line each, as every error here
      for (const auto& p : problems) fail(kExitFailure, p);
      if (!problems.empty()) return kExitFailure;
    }
  } catch (const UsageError& e) {
    return fail(kExitUsage, e.what());
  } catch (const Error& e) {
    return fail(kExitFailure, e.what());
  } catch (const std::bad_alloc&) {
    return fail(kExitFailure, "out of memory");
  } catch (const std::exception& e) {
    return fail(kExitFailure, fmt::format("internal error: {}", e.what()));
  }
  return 0;
}

}  // namespace flashdraft::cli
